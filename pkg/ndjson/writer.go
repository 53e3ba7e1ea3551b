package ndjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Writer writes records, one JSON object per line, through a 64 KiB buffer.
// HTML in strings is written as is, not escaped to \u003c. A Writer is not
// safe for concurrent use.
type Writer struct {
	bw        *bufio.Writer
	buf       bytes.Buffer
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
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("ndjson: encode %T: %w", v, err)
	}
	return buf.Bytes(), nil
}
