package media

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The reasons of a media record that are feed-media's own (the others are
// the codes of an HTTP exchange's error: http_404, timeout, ...).
const (
	reasonTooLarge  = "too_large"         // over the feed's cap per file
	reasonWrongType = "wrong_type"        // a media type the feed does not take
	reasonNoType    = "no_type"           // no media type told, by the server or the bytes
	reasonRobots    = "robots_disallowed" // an image robots.txt disallows
	reasonBudget    = "budget"            // the day's bytes are spent
	reasonDisk      = "disk_floor"        // the disk is below its floor
	reasonStopped   = "stopped"           // feed-media was stopped
	reasonShort     = "short_body"        // the body ended before its length
	reasonStorage   = "storage"           // the store could not be written
)

// outcome is how one try ended.
type outcome struct {
	status, reason, message string
	httpStatus              int
	finalURL                string
	sum                     string // stored: the file's SHA-256
	size                    int64  // stored: its size; else the bytes got
	contentType             string
	resumedFrom             int64
	restarted               bool
	held                    int64  // retrying: bytes of the partial kept for a resume
	validator               string // their If-Range validator
	next                    time.Time
	// counts says a retry follows a failure, which waits, longer each
	// time, and is given up after MaxAttempts.
	counts     bool
	retryAfter time.Duration
}

// try makes one try at a queued file and records how it ended. Its error
// is the store's or the catalog's, which stops the run.
func (r *runner) try(ctx context.Context, job catalog.MediaJob) error {
	started := r.now()
	sub, ok, err := r.subscription(ctx, job.FeedID)
	if err != nil {
		return err
	}
	m := sub.Media
	if !ok || !m.On() || job.Kind == ndjson.MediaImage && !m.Images || job.Kind == ndjson.MediaEnclosure && len(m.Types) == 0 {
		r.cfg.Log.Info("dropped a queued file: its feed no longer asks for it", "feed_id", job.FeedID, "url", job.URL)
		r.mu.Lock()
		r.sum.Dropped++
		r.mu.Unlock()
		if err := r.cat.DropMedia(context.WithoutCancel(ctx), job.FeedID, job.ID); err != nil {
			return err
		}
		return r.st.RemovePartial(job.ID)
	}
	f, err := r.st.OpenPartial(job.ID)
	if err != nil {
		return err
	}
	o, err := r.download(ctx, job, sub, f)
	if err != nil {
		f.Close()
		return err
	}
	return r.finish(context.WithoutCancel(ctx), job, o, f, started)
}

// download fetches the file of job into its partial file f, resuming what
// f holds when it can, and checks it against the feed's settings as it
// comes. Its error is the store's; how the try went is the outcome.
func (r *runner) download(ctx context.Context, job catalog.MediaJob, sub ndjson.Subscription, f *os.File) (outcome, error) {
	o := outcome{status: ndjson.MediaRetrying}
	fi, err := f.Stat()
	if err != nil {
		return o, fmt.Errorf("media: %w", err)
	}
	// The bytes held are resumed only when a validator can say the file
	// is the same, and as far as they are known synced.
	from := int64(0)
	if job.PartialValidator != "" && job.PartialBytes > 0 && fi.Size() >= job.PartialBytes {
		from = job.PartialBytes
	}
	o.restarted = job.PartialBytes > 0 && from == 0
	h := sha256.New()
	if err := restartAt(f, h, from); err != nil {
		return o, err
	}
	client := r.cfg.Client
	if sub.AllowPrivate {
		client = client.Private()
	}
	if job.Kind == ndjson.MediaImage {
		ok, err := client.RobotsAllowed(ctx, job.URL, r.cfg.Limiter)
		switch {
		case err != nil:
			return stopped(o, from, job.PartialValidator), nil
		case !ok:
			o.status, o.reason, o.message = ndjson.MediaRefused, reasonRobots, "robots.txt of its host disallows it"
			return o, nil
		}
	}
	validator := job.PartialValidator
	for {
		host := httpx.HostKey(job.URL)
		release, err := r.cfg.Limiter.Acquire(ctx, host)
		if err != nil {
			return stopped(o, from, validator), nil
		}
		req := httpx.StreamRequest{Request: httpx.Request{URL: job.URL, UserAgent: sub.UserAgent, Limiter: r.cfg.Limiter, Release: release},
			From: from, IfRange: validator, Timeout: r.cfg.FileTimeout}
		if httpx.HostKey(sub.URL) == host {
			// The feed's own credentials go to its own host only.
			req.Header = http.Header{}
			for k, v := range sub.Headers {
				req.Header.Set(k, v)
			}
			if sub.Auth != nil {
				req.Auth = &httpx.BasicAuth{Username: sub.Auth.Username, Password: sub.Auth.Password}
			}
		}
		s := client.Stream(ctx, req)
		o.httpStatus, o.finalURL = s.Status, s.URL
		if s.Err != nil && s.Err.Code == "http_416" && from > 0 {
			// The bytes held are no beginning of the file the server
			// has: start again.
			from, validator, o.restarted = 0, "", true
			if err := restartAt(f, h, 0); err != nil {
				return o, err
			}
			continue
		}
		if s.Err != nil {
			if ctx.Err() != nil {
				return stopped(o, from, validator), nil
			}
			return failure(o, s.Err, s.RetryAfter, from, validator), nil
		}
		return r.receive(ctx, job, sub, f, h, s, from, o)
	}
}

// receive reads the body of s into f, which holds from bytes of the
// file, checking the file's type and size as they become known.
func (r *runner) receive(ctx context.Context, job catalog.MediaJob, sub ndjson.Subscription, f *os.File, h hash.Hash, s *httpx.Stream, from int64, o outcome) (outcome, error) {
	defer s.Body.Close()
	if s.Offset == 0 && from > 0 {
		// The whole file came: it changed since the bytes held (If-Range),
		// or the server does not do ranges.
		o.restarted = true
		if err := restartAt(f, h, 0); err != nil {
			return o, err
		}
	}
	at := s.Offset
	o.resumedFrom = at
	validator := ""
	if !s.Encoded {
		validator = s.ETag
		if validator == "" {
			validator = s.LastModified
		}
	}
	// The type: as served, or, when the server says only "bytes", as the
	// first bytes show it (http.DetectContentType, the WHATWG sniffing
	// rules).
	buf := make([]byte, 256<<10)
	n, rerr := io.ReadAtLeast(s.Body, buf[:512], 512)
	first := buf[:n]
	if rerr == io.ErrUnexpectedEOF || rerr == io.EOF {
		rerr = io.EOF
	}
	ct := MediaType(s.Header.Get("Content-Type"))
	if Generic(ct) {
		head := first
		if at > 0 {
			head = make([]byte, 512)
			k, _ := f.ReadAt(head, 0)
			head = head[:k]
		}
		ct = ""
		if sniffed := MediaType(http.DetectContentType(head)); !Generic(sniffed) && !strings.HasPrefix(sniffed, "text/plain") {
			ct = sniffed
		}
	}
	o.contentType = ct
	m := sub.Media
	switch {
	case ct == "":
		o.status, o.reason = ndjson.MediaRefused, reasonNoType
		o.message = fmt.Sprintf("the server says only %q, and its first bytes tell no type", s.Header.Get("Content-Type"))
		return o, nil
	case job.Kind == ndjson.MediaImage && !strings.HasPrefix(ct, "image/"):
		o.status, o.reason, o.message = ndjson.MediaRefused, reasonWrongType, ct+" is not an image"
		return o, nil
	case job.Kind == ndjson.MediaEnclosure && !Allowed(m.Types, ct):
		o.status, o.reason, o.message = ndjson.MediaRefused, reasonWrongType, fmt.Sprintf("%s is not one of the feed's types (%s)", ct, strings.Join(m.Types, ", "))
		return o, nil
	}
	limit := m.MaxBytes
	if limit <= 0 {
		limit = r.cfg.MaxFileBytes
	}
	if s.Size > limit {
		o.status, o.reason, o.size = ndjson.MediaRefused, reasonTooLarge, at
		o.message = fmt.Sprintf("%s, over the feed's cap of %s a file", FormatSize(s.Size), FormatSize(limit))
		return o, nil
	}
	synced, syncedAt := at, r.now()
	sync := func() error {
		if validator == "" || synced == at {
			return nil
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("media: sync %s: %w", f.Name(), err)
		}
		synced, syncedAt = at, r.now()
		if err := r.cat.MediaProgress(context.WithoutCancel(ctx), job.ID, at, validator); err != nil {
			return err
		}
		return r.saveBudget(context.WithoutCancel(ctx))
	}
	// held is the outcome of a try cut short: what it got is kept, as far
	// as it is synced and can be resumed.
	held := func(o outcome) (outcome, error) {
		if err := sync(); err != nil {
			return o, err
		}
		o.size = at
		if validator != "" {
			o.held, o.validator = at, validator
		}
		return o, nil
	}
	chunk := first
	for {
		if len(chunk) > 0 {
			if at+int64(len(chunk)) > limit {
				o.status, o.reason, o.size = ndjson.MediaRefused, reasonTooLarge, at
				o.message = fmt.Sprintf("over the feed's cap of %s a file: cut there", FormatSize(limit))
				return o, nil
			}
			if _, err := f.Write(chunk); err != nil {
				o.reason, o.message = reasonStorage, "the store could not be written: "+err.Error()
				o.next = r.now().Add(r.cfg.Poll)
				return o, nil
			}
			h.Write(chunk)
			at += int64(len(chunk))
			r.mu.Lock()
			r.sum.Bytes += int64(len(chunk))
			r.mu.Unlock()
			if today := r.spent(int64(len(chunk))); r.cfg.DailyBudget > 0 && today > r.cfg.DailyBudget {
				o.reason, o.message, o.next = reasonBudget, "the day's byte budget is spent (--daily-budget): resumed the next UTC day", nextDay(r.now())
				return held(o)
			}
			if at-synced >= r.cfg.SyncEvery || r.now().Sub(syncedAt) >= r.cfg.SyncInterval {
				if r.belowFloor() {
					o.reason, o.message, o.next = reasonDisk, "the store's disk is below its floor (--disk-floor): resumed when there is room", r.now().Add(r.cfg.Poll)
					return held(o)
				}
				if err := sync(); err != nil {
					return o, err
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if ctx.Err() != nil {
				return held(stopped(o, 0, ""))
			}
			e := s.ReadError(rerr)
			o.reason, o.message, o.counts = e.Code, e.Message, true
			return held(o)
		}
		var n int
		n, rerr = s.Body.Read(buf)
		chunk = buf[:n]
	}
	if s.Size >= 0 && at != s.Size {
		o.reason, o.counts = reasonShort, true
		o.message = fmt.Sprintf("the body ended at %d bytes of %d", at, s.Size)
		return held(o)
	}
	o.status, o.sum, o.size = ndjson.MediaStored, hex.EncodeToString(h.Sum(nil)), at
	return o, nil
}

// restartAt makes f hold its first from bytes only, read again into h
// (reset), and positions f after them.
func restartAt(f *os.File, h hash.Hash, from int64) error {
	h.Reset()
	if err := f.Truncate(from); err != nil {
		return fmt.Errorf("media: %w", err)
	}
	if from > 0 {
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, from)); err != nil {
			return fmt.Errorf("media: read %s: %w", f.Name(), err)
		}
	}
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return fmt.Errorf("media: %w", err)
	}
	return nil
}

// stopped is the outcome of a try that feed-media's stop cut short: the
// bytes held stay for the next run, which tries at once.
func stopped(o outcome, held int64, validator string) outcome {
	o.status, o.reason, o.message = ndjson.MediaRetrying, reasonStopped, "feed-media was stopped: the next run goes on"
	o.held, o.validator, o.size = held, validator, held
	return o
}

// failure is the outcome of a request that failed: refused for an address
// feedpipe refuses, failed for what will not change (a 404, a bad URL),
// else retried later, the bytes held kept.
func failure(o outcome, e *ndjson.Error, retryAfter time.Duration, held int64, validator string) outcome {
	o.reason, o.message = e.Code, e.Message
	switch {
	case e.Code == httpx.CodeAddressRefused:
		o.status = ndjson.MediaRefused
	case e.Class == ndjson.ClassPermanent:
		o.status = ndjson.MediaFailed
	default:
		o.status, o.counts, o.retryAfter = ndjson.MediaRetrying, true, retryAfter
		o.held, o.validator, o.size = held, validator, held
	}
	return o
}

// finish records how a try ended: the file stored, when it was; its media
// record appended to media/ and synced, then its row; the record on Out.
func (r *runner) finish(ctx context.Context, job catalog.MediaJob, o outcome, f *os.File, started time.Time) error {
	rec := &ndjson.Media{Header: ndjson.Head(ndjson.TypeMedia), FeedID: job.FeedID, EntryUID: job.EntryUID, Kind: job.Kind, URL: job.URL,
		FinalURL: o.finalURL, Status: o.status, Reason: o.reason, Message: o.message, HTTPStatus: o.httpStatus, Bytes: o.size,
		ContentType: o.contentType, ResumedFrom: o.resumedFrom, Restarted: o.restarted, Attempt: job.Attempts + 1, StartedAt: ndjson.At(started)}
	var next time.Time
	if o.status == ndjson.MediaRetrying {
		next = o.next
		if o.counts {
			if rec.Attempt >= r.cfg.MaxAttempts {
				rec.Status = ndjson.MediaFailed
				rec.Message += fmt.Sprintf(" (given up after %d tries)", rec.Attempt)
			} else {
				next = r.now().Add(max(retryDelay(rec.Attempt), o.retryAfter))
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.locked(func() error {
		if rec.Status == ndjson.MediaStored {
			key, err := r.st.CommitMedia(f, job.ID, o.sum)
			if err != nil {
				return err
			}
			rec.Key, rec.SHA256 = key, o.sum
		} else {
			f.Close()
			if rec.Status != ndjson.MediaRetrying || o.held == 0 {
				if err := r.st.RemovePartial(job.ID); err != nil {
					return err
				}
			}
		}
		at := r.now()
		rec.At, rec.DurationMS = ndjson.At(at), at.Sub(started).Milliseconds()
		key := storedir.DayFile(storedir.DirMedia, at)
		rec.StoredIn = key
		line, err := ndjson.Marshal(rec)
		if err != nil {
			return err
		}
		off, err := r.st.AppendLines(key, line, storedir.Durable)
		if err != nil {
			return err
		}
		if err := r.cat.FinishMedia(ctx, catalog.MediaTry{Record: rec, Key: key, End: off + int64(len(line)), NextTryAt: next, Validator: o.validator}); err != nil {
			return err
		}
		switch rec.Status {
		case ndjson.MediaStored:
			r.sum.Stored++
			r.cfg.Log.Info("media stored", "feed_id", rec.FeedID, "url", rec.URL, "bytes", rec.Bytes, "sha256", rec.SHA256, "resumed_from", rec.ResumedFrom)
		case ndjson.MediaRefused:
			r.sum.Refused++
			r.cfg.Log.Warn("media refused", "feed_id", rec.FeedID, "url", rec.URL, "reason", rec.Reason, "message", rec.Message)
		case ndjson.MediaFailed:
			r.sum.Failed++
			r.cfg.Log.Warn("media failed", "feed_id", rec.FeedID, "url", rec.URL, "reason", rec.Reason, "message", rec.Message)
		default:
			r.sum.Retrying++
			r.cfg.Log.Info("media to retry", "feed_id", rec.FeedID, "url", rec.URL, "reason", rec.Reason, "bytes_held", o.held, "next_try_at", next)
		}
		if err := r.saveBudget(ctx); err != nil {
			return err
		}
		if err := r.cfg.Out.Write(rec); err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
		return r.cfg.Out.Flush()
	})
}
