package ndjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// Writer writes records, one JSON object per line, through a 64 KiB buffer.
// A line is what encoding/json writes, with HTML in strings written as is,
// not escaped to \u003c; the records the stages write most are encoded by
// hand (appendRecord), to the byte the same. A Writer is not safe for
// concurrent use.
type Writer struct {
	bw        *bufio.Writer
	line      []byte       // the record being encoded by appendRecord
	buf       bytes.Buffer // and by enc, for the types it leaves
	enc       *json.Encoder
	autoFlush bool
}

// NewWriter returns a buffered Writer on w.
func NewWriter(w io.Writer) *Writer {
	wr := &Writer{bw: bufio.NewWriterSize(w, 64<<10)}
	wr.enc = json.NewEncoder(&wr.buf)
	wr.enc.SetEscapeHTML(false)
	return wr
}

// SetAutoFlush makes every Write flush, for output that a person watches.
func (w *Writer) SetAutoFlush(on bool) { w.autoFlush = on }

// Write encodes v as one line.
func (w *Writer) Write(v any) error {
	if line, ok := appendRecord(w.line[:0], v); ok {
		w.line = append(line, '\n')
		err := w.emit(w.line)
		if cap(w.line) > maxKeptLine {
			w.line = nil
		}
		return err
	}
	w.buf.Reset()
	if err := w.enc.Encode(v); err != nil {
		return fmt.Errorf("ndjson: encode %T: %w", v, err)
	}
	return w.emit(w.buf.Bytes())
}

// WriteRaw writes an already encoded record, adding the newline. It is how
// a stage passes through a record it does not consume, byte for byte.
func (w *Writer) WriteRaw(line []byte) error {
	if _, err := w.bw.Write(line); err != nil {
		return err
	}
	return w.emit([]byte{'\n'})
}

func (w *Writer) emit(b []byte) error {
	if _, err := w.bw.Write(b); err != nil {
		return err
	}
	if w.autoFlush {
		return w.bw.Flush()
	}
	return nil
}

// Flush writes out everything buffered; its error must be checked, since it
// is the last chance to learn that output was lost.
func (w *Writer) Flush() error { return w.bw.Flush() }

// Marshal encodes v as one record line, with its newline, the way a Writer
// does.
func Marshal(v any) ([]byte, error) {
	lp := lines.Get().(*[]byte)
	line, ok := appendRecord((*lp)[:0], v)
	if ok {
		line = append(line, '\n')
		// Callers keep lines: a copy of the pool's buffer, made by append,
		// which does not clear what it is about to fill.
		out := append([]byte(nil), line...)
		if cap(line) <= maxKeptLine {
			*lp = line
			lines.Put(lp)
		}
		return out, nil
	}
	lines.Put(lp)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("ndjson: encode %T: %w", v, err)
	}
	return buf.Bytes(), nil
}

// Append appends v's record line, with its newline, to b, as Marshal
// encodes it: a stage that gathers many records in one buffer encodes
// each there, with no copy. On an error b is returned as it was.
func Append(b []byte, v any) ([]byte, error) {
	if line, ok := appendRecord(b, v); ok {
		return append(line, '\n'), nil
	}
	line, err := Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, line...), nil
}

// lines holds Marshal's buffers for reuse.
var lines = sync.Pool{New: func() any { return new([]byte) }}

// maxKeptLine is the largest buffer kept for reuse: a rare huge entry does
// not pin its size of memory for good.
const maxKeptLine = 1 << 20
