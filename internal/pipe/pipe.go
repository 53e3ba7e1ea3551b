// Package pipe runs the record loop every stage shares: read NDJSON, hand
// each record to the stage, report bad lines by number and keep going.
package pipe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/plural"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// ErrFailed marks a run in which some lines or feeds failed. Each failure
// was reported as it happened; the stage finished everything else, and
// exits 1.
var ErrFailed = errors.New("some records failed")

// Failures counts what went wrong in a run.
type Failures struct {
	BadLines int // input lines that were not records
	Records  int // records the stage could not handle (bad fields, failed feeds)
}

// Err returns nil when nothing failed, else an error that sums up the
// failures and matches ErrFailed. one and many name the records ("feed",
// "feeds").
func (f Failures) Err(one, many string) error {
	if f.BadLines == 0 && f.Records == 0 {
		return nil
	}
	return &failedError{f: f, one: one, many: many}
}

type failedError struct {
	f         Failures
	one, many string
}

func (e *failedError) Error() string {
	var parts []string
	if n := e.f.Records; n > 0 {
		parts = append(parts, fmt.Sprintf("%d %s failed", n, plural.Word(n, e.one, e.many)))
	}
	if n := e.f.BadLines; n > 0 {
		parts = append(parts, fmt.Sprintf("%d malformed input %s skipped", n, plural.Word(n, "line", "lines")))
	}
	return strings.Join(parts, ", ") + " (each reported above)"
}

func (e *failedError) Is(target error) bool { return target == ErrFailed }

// Each reads records from in and calls fn for each well-formed one, in
// order. A malformed line is logged with its line number, counted in
// f.BadLines and skipped. Reading stops at the end of input, when ctx is
// done (a signal: the stage finishes what it has and exits), or when fn
// returns an error, which Each returns.
func Each(ctx context.Context, in io.Reader, log *slog.Logger, f *Failures, fn func(ndjson.Line) error) error {
	return EachFrom(ctx, ndjson.NewReader(in), log, f, fn)
}

// Decoded is a Reader of in for a stage that decodes every line of the
// record types named: it leaves checking their JSON to the decoding,
// which does it anyway (ndjson.Reader.SetDecoded).
func Decoded(in io.Reader, types ...string) *ndjson.Reader {
	r := ndjson.NewReader(in)
	r.SetDecoded(types...)
	return r
}

// EachFrom is Each over a Reader the stage set up (Decoded).
func EachFrom(ctx context.Context, r *ndjson.Reader, log *slog.Logger, f *Failures, fn func(ndjson.Line) error) error {
	for ctx.Err() == nil {
		line, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		var le *ndjson.LineError
		if errors.As(err, &le) {
			f.BadLines++
			log.Error("skipping malformed input", "line", le.Line, "error", le.Err)
			continue
		}
		if err != nil {
			return fmt.Errorf("read input: %w", err)
		}
		if err := fn(line); err != nil {
			return err
		}
	}
	return nil
}

// Drain returns a context for Each that a signal does not cancel. A stage
// in the middle of a pipeline reads to the end of its input, which comes
// once the stages upstream have stopped, so that no record in flight
// between them is lost; a second signal still kills the process.
func Drain(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// Batch returns first followed by what else comes from ch within linger,
// up to max items in all; with linger 0, only what is already waiting. A
// stage that makes each batch durable with one sync thus syncs once per
// many records when they flow, and promptly when one comes alone.
func Batch[T any](first T, ch <-chan T, max int, linger time.Duration) []T {
	batch := []T{first}
	var deadline <-chan time.Time
	if linger > 0 {
		timer := time.NewTimer(linger)
		defer timer.Stop()
		deadline = timer.C
	}
	for len(batch) < max {
		select {
		case it, ok := <-ch:
			if !ok {
				return batch
			}
			batch = append(batch, it)
			continue
		default:
		}
		if deadline == nil {
			return batch
		}
		select {
		case it, ok := <-ch:
			if !ok {
				return batch
			}
			batch = append(batch, it)
		case <-deadline:
			return batch
		}
	}
	return batch
}

// Decode decodes a line the stage consumes; on failure it logs the line
// number and counts a bad line, and returns false.
func Decode(line ndjson.Line, v any, log *slog.Logger, f *Failures) bool {
	if err := line.Decode(v); err != nil {
		f.BadLines++
		log.Error("skipping malformed input", "line", line.Num, "error", errors.Unwrap(err))
		return false
	}
	return true
}
