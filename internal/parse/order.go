package parse

import (
	"bytes"
	"sync"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// job is one unit of ordered work: run on a worker (if run is set), then
// its output written in the order jobs were submitted.
type job struct {
	run    func()
	out    []byte // the lines to write, without the last newline
	failed bool
	seq    int64 // its place in the order
	held   int64 // bytes of out counted against the budget
	buf    *[]byte
}

// outBufs are the buffers workers encode their output into, used again
// once it is written: a feed's output runs to megabytes, and a new
// buffer grown for each one cost a tenth of feed-parse's time in
// allocating, clearing and returning memory.
var outBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBuf is the largest buffer kept for reuse.
const maxPooledBuf = 16 << 20

// encode makes j.out the lines of the entries and then of the record, in
// a buffer of outBufs, encoded by pkg/ndjson's encoder (by hand, not by
// encoding/json's reflection: a tenth of feed-parse's time), as
// ndjson.Writer writes them. logErr reports a value that cannot be
// encoded ("an entry", "the fetch record"), which is left out.
func (j *job) encode(entries []ndjson.Entry, rec *ndjson.Fetch, logErr func(what string, err error)) {
	j.buf = outBufs.Get().(*[]byte)
	// Room for it all, in one allocation rather than a dozen as it grows:
	// the texts, a third more for their escapes, and the fields.
	need := 4096
	for i := range entries {
		e := &entries[i]
		need += 1024 + (len(e.Title)+len(e.Summary)+len(e.Content))*4/3
	}
	if cap(*j.buf) < need {
		*j.buf = make([]byte, 0, need)
	}
	b := (*j.buf)[:0]
	var err error
	for i := range entries {
		if b, err = ndjson.Append(b, &entries[i]); err != nil {
			logErr("an entry", err)
		}
	}
	if b, err = ndjson.Append(b, rec); err != nil {
		logErr("the fetch record", err)
	}
	*j.buf = b
	j.out = bytes.TrimSuffix(b, []byte("\n"))
}

// release gives j's buffer back once its output is written.
func (j *job) release() {
	if j.buf != nil && cap(*j.buf) <= maxPooledBuf {
		outBufs.Put(j.buf)
	}
	j.buf, j.out = nil, nil
}

// Lookahead: how far the workers may run ahead of the writing, in jobs
// and in bytes of output waiting to be written. Feeds differ in size a
// thousandfold, and the output keeps the input's order: with a short
// window, one worker's big feed would leave the others idle. The byte
// budget keeps a run of big feeds from filling memory.
const (
	lookaheadJobs        = 64 // per worker
	lookaheadBytes int64 = 32 << 20
)

// ordered runs jobs on a pool of workers and writes their results in the
// order they were submitted. There is no writer of its own: whoever
// finishes the job next in order (a worker, or submit for a job with its
// output already) writes it and the finished ones after it, while the
// other workers go on. A writer goroutine woken for every job, and a
// worker waiting for the submitter's hand-off, put threads to sleep and
// woke them again for each feed; on a loaded machine every wake-up
// waited for a CPU, and two cores gained little over one.
type ordered struct {
	work    chan *job // jobs to run, room for the whole window
	write   func(*job) error
	workers sync.WaitGroup

	mu      sync.Mutex
	cond    *sync.Cond // workers over the budget wait on it for next or pending
	waiting int        // ... this many
	space   *sync.Cond // submit waits on it for room in the window
	full    bool       // ... and is woken when half the window is free
	werr    error      // the first write error; nothing is written after it
	seq     int64      // the next job's seq
	next    int64      // the seq of the job to be written next
	window  int64      // jobs submitted and not yet written, at most
	done    []*job     // finished jobs waiting for their turn, by seq % window
	writing bool       // a goroutine is writing; it writes what finishes meanwhile
	pending int64      // bytes of output finished and not yet written
	budget  int64
}

// startOrdered starts workers goroutines; write is called for each job in
// the order of submission, never twice at once.
func startOrdered(workers int, write func(*job) error) *ordered {
	window := int64(lookaheadJobs * workers)
	o := &ordered{
		work:   make(chan *job, window),
		write:  write,
		window: window,
		done:   make([]*job, window),
		budget: lookaheadBytes * int64(workers),
	}
	o.cond = sync.NewCond(&o.mu)
	o.space = sync.NewCond(&o.mu)
	for range workers {
		o.workers.Go(func() {
			for j := range o.work {
				o.mu.Lock()
				// Over the budget, only the job to be written next may
				// start: the output ahead of it cannot be written before
				// it, so holding it back would deadlock.
				for o.pending > o.budget && j.seq != o.next {
					o.waiting++
					o.cond.Wait()
					o.waiting--
				}
				o.mu.Unlock()
				j.run()
				o.mu.Lock()
				o.finish(j)
				o.mu.Unlock()
			}
		})
	}
	return o
}

// finish counts j's output as pending and, unless another goroutine is
// writing, writes every finished job from the next in order on. o.mu is
// held, and let go of while writing.
func (o *ordered) finish(j *job) {
	j.held = int64(len(j.out))
	o.pending += j.held
	o.done[j.seq%o.window] = j
	if o.writing {
		return // the writing goroutine looks for j when it is next
	}
	o.writing = true
	for {
		slot := o.next % o.window
		k := o.done[slot]
		if k == nil {
			break
		}
		o.done[slot] = nil
		if o.werr == nil {
			o.mu.Unlock()
			err := o.write(k)
			o.mu.Lock()
			if err != nil {
				o.werr = err // from now on, jobs are only counted off
				o.full = false
				o.space.Signal()
			}
		}
		o.pending -= k.held
		o.next++
		if o.waiting > 0 {
			o.cond.Broadcast()
		}
		if o.full && o.seq-o.next <= o.window/2 {
			o.full = false
			o.space.Signal()
		}
	}
	o.writing = false
}

// submit queues j. It returns the writer's error once writing failed.
func (o *ordered) submit(j *job) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.seq-o.next >= o.window && o.werr == nil {
		o.full = true // woken when half the window is free: not for every job
		o.space.Wait()
	}
	if o.werr != nil {
		return o.werr
	}
	j.seq = o.seq
	o.seq++
	if j.run == nil {
		// Output already: it counts against the budget from now, and
		// waits while the budget is spent, as a worker would.
		for o.pending > o.budget && j.seq != o.next && o.werr == nil {
			o.waiting++
			o.cond.Wait()
			o.waiting--
		}
		o.finish(j)
		return o.werr
	}
	o.work <- j // never blocks: the window has room for it
	return nil
}

// close waits for every job to be written and returns the writer's
// error.
func (o *ordered) close() error {
	close(o.work)
	o.workers.Wait()
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.werr
}
