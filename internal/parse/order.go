package parse

import (
	"bytes"
	"sync"
)

// job is one unit of ordered work: run on a worker (if run is set), then
// its output written in the order jobs were submitted.
type job struct {
	run    func()
	out    []byte // the lines to write, without the last newline
	failed bool
	done   chan struct{}
	seq    int64 // its place in the order
	held   int64 // bytes of out counted against the budget
	buf    *bytes.Buffer
}

// outBufs are the buffers workers encode their output into, used again
// once it is written: a feed's output runs to megabytes, and a new
// buffer grown for each one cost a tenth of feed-parse's time in
// allocating, clearing and returning memory.
var outBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuf is the largest buffer kept for reuse.
const maxPooledBuf = 16 << 20

// buffer is an empty buffer for j's output, which j.out may then share.
func (j *job) buffer() *bytes.Buffer {
	j.buf = outBufs.Get().(*bytes.Buffer)
	j.buf.Reset()
	return j.buf
}

// release gives j's buffer back once its output is written.
func (j *job) release() {
	if j.buf != nil && j.buf.Cap() <= maxPooledBuf {
		outBufs.Put(j.buf)
	}
	j.buf, j.out = nil, nil
}

// Lookahead: how far the workers may run ahead of the writer, in jobs
// and in bytes of output waiting to be written. Feeds differ in size a
// thousandfold, and the output keeps the input's order: with a short
// queue, one worker's big feed would leave the others idle. The byte
// budget keeps a run of big feeds from filling memory.
const (
	lookaheadJobs        = 64 // per worker
	lookaheadBytes int64 = 32 << 20
)

// ordered runs jobs on a pool of workers and writes their results in the
// order they were submitted.
type ordered struct {
	work    chan *job
	queue   chan *job
	dead    chan struct{} // closed when the writer failed
	werr    error
	workers sync.WaitGroup
	writer  sync.WaitGroup
	seq     int64 // the next job's seq (submit's, one goroutine)

	mu      sync.Mutex
	cond    *sync.Cond
	pending int64 // bytes of output done and not yet written
	next    int64 // the seq of the job the writer waits for
	budget  int64
}

func startOrdered(workers int, write func(*job) error) *ordered {
	o := &ordered{
		work:   make(chan *job),
		queue:  make(chan *job, lookaheadJobs*workers),
		dead:   make(chan struct{}),
		budget: lookaheadBytes * int64(workers),
	}
	o.cond = sync.NewCond(&o.mu)
	for range workers {
		o.workers.Go(func() {
			for j := range o.work {
				o.mu.Lock()
				// Over the budget, only the job the writer waits for may
				// start: the output ahead of it cannot be written before
				// it, so holding it back would deadlock.
				for o.pending > o.budget && j.seq != o.next {
					o.cond.Wait()
				}
				o.mu.Unlock()
				j.run()
				o.mu.Lock()
				j.held = int64(len(j.out))
				o.pending += j.held
				o.mu.Unlock()
				close(j.done)
			}
		})
	}
	o.writer.Go(func() {
		for j := range o.queue {
			<-j.done
			if o.werr == nil {
				if err := write(j); err != nil {
					o.mu.Lock()
					o.werr = err
					o.mu.Unlock()
					close(o.dead) // from now on, drain
				}
			}
			o.mu.Lock()
			o.pending -= j.held
			o.next = j.seq + 1
			o.cond.Broadcast()
			o.mu.Unlock()
		}
	})
	return o
}

// submit queues j. It returns the writer's error once writing failed.
func (o *ordered) submit(j *job) error {
	j.done = make(chan struct{})
	j.seq = o.seq
	o.seq++
	if j.run == nil {
		// Output already: it counts against the budget from now, and
		// waits while the budget is spent, as a worker would.
		o.mu.Lock()
		for o.pending > o.budget && j.seq != o.next && o.werr == nil {
			o.cond.Wait()
		}
		j.held = int64(len(j.out))
		o.pending += j.held
		o.mu.Unlock()
		close(j.done)
	}
	select {
	case o.queue <- j:
	case <-o.dead:
		return o.werr
	}
	if j.run != nil {
		select {
		case o.work <- j:
		case <-o.dead:
			// The writer drains the queue; this job must still finish.
			go func() { j.run(); close(j.done) }()
			return o.werr
		}
	}
	return nil
}

// close waits for every job to be written and returns the writer's
// error.
func (o *ordered) close() error {
	close(o.work)
	o.workers.Wait()
	close(o.queue)
	o.writer.Wait()
	return o.werr
}
