package ndjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// MaxLineBytes is the longest record a Reader accepts by default. Entries
// carry whole articles, so it is generous; a longer line is skipped with
// ErrLineTooLong rather than read into memory.
const MaxLineBytes = 64 << 20

// ErrLineTooLong is the cause of a LineError for a line over the limit.
var ErrLineTooLong = errors.New("line too long")

// LineError is a problem with one input line. The line is skipped and
// reading can go on: a LineError is never fatal.
type LineError struct {
	Line int   // 1-based line number in the input
	Err  error // what was wrong
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Line is one record as read: its raw bytes (without the newline), its
// number and its "type". Raw is only valid until the next call to Next.
type Line struct {
	Num  int
	Type string
	Raw  []byte
	// Unterminated is set for a last line that had no newline: complete
	// for a stream that ended without one, possibly torn in a store file
	// that is still being appended to.
	Unterminated bool
	// unchecked is set for a line of a type the caller decodes
	// (Reader.SetDecoded), which Next did not check is JSON.
	unchecked bool
}

// Decode unmarshals the line into v, reporting a failure as a LineError.
// A record type with a Check method (Due, Fetch, Entry) must also pass it.
// A line Next did not check (Reader.SetDecoded) that is not JSON is
// reported as Next would have reported it.
func (l Line) Decode(v any) error {
	if err := Unmarshal(l.Raw, v); err != nil {
		if l.unchecked && !valid(l.Raw) {
			return l.invalid()
		}
		return &LineError{Line: l.Num, Err: fmt.Errorf("bad %s record: %w", l.typeName(), err)}
	}
	if c, ok := v.(interface{ Check() error }); ok {
		if err := c.Check(); err != nil {
			return &LineError{Line: l.Num, Err: err}
		}
	}
	return nil
}

func (l Line) typeName() string {
	if l.Type == "" {
		return "untyped"
	}
	return strconv.Quote(l.Type)
}

// Reader reads records one line at a time. Blank lines are skipped; a line
// that is not a JSON object, or is too long, is reported as a *LineError and
// skipped, and the next call goes on with the following line.
type Reader struct {
	br      *bufio.Reader
	max     int
	num     int
	buf     []byte
	skipped bool     // the previous line was cut off at max and is being discarded
	decoded []string // SetDecoded
}

// NewReader returns a Reader over r with a limit of MaxLineBytes per line.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: MaxLineBytes}
}

// Buffered returns how many bytes the Reader has read from its source
// beyond the line it last returned. A caller counting the bytes of the
// source finds a line's end offset with it.
func (r *Reader) Buffered() int { return r.br.Buffered() }

// SetMaxLineBytes changes the line limit.
func (r *Reader) SetMaxLineBytes(n int) { r.max = n }

// SetDecoded names record types the caller decodes every line of, with
// Line.Decode (or Line.EntryKey, then Decode when it does not read the
// line). Next then leaves checking that such a line is JSON to the
// decoding, which does it anyway (a second pass over every line was a
// tenth of feed-dedup's time), and Decode reports a line that is not as
// Next would have. Only lines that start as feedpipe writes them,
// {"type":"...", are left so.
func (r *Reader) SetDecoded(types ...string) { r.decoded = types }

// Next returns the next record. At the end of input it returns io.EOF; a
// *LineError means that one line was bad; any other error is a read error.
func (r *Reader) Next() (Line, error) {
	for {
		raw, terminated, err := r.readLine()
		if err != nil {
			return Line{}, err
		}
		line := Line{Num: r.num, Raw: raw, Unterminated: !terminated}
		if r.skipped {
			r.skipped = false
			return line, &LineError{Line: r.num, Err: fmt.Errorf("%w (limit %d bytes)", ErrLineTooLong, r.max)}
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		if err := line.classify(r.decoded); err != nil {
			return line, err
		}
		return line, nil
	}
}

// ParseLine checks one record read by other means than a Reader (a
// message of a Redis stream, say) as Next checks a line: raw must be one
// JSON object; the Line has its type and number 1.
func ParseLine(raw []byte) (Line, error) {
	line := Line{Num: 1, Raw: raw}
	if len(bytes.TrimSpace(raw)) == 0 {
		return line, &LineError{Line: 1, Err: errors.New("empty record")}
	}
	return line, line.classify(nil)
}

// readLine reads one physical line into r.buf without its line ending. A
// line longer than r.max is consumed to its end and flagged in r.skipped.
func (r *Reader) readLine() (raw []byte, terminated bool, err error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if !r.skipped {
			if len(r.buf)+len(chunk) > r.max+2 { // +2 leaves room for "\r\n"
				r.skipped = true
				r.buf = r.buf[:0]
			} else {
				r.buf = append(r.buf, chunk...)
			}
		}
		switch {
		case err == nil:
			r.num++
			return trimEOL(r.buf), true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(r.buf) == 0 && !r.skipped {
				return nil, false, io.EOF
			}
			r.num++
			return trimEOL(r.buf), false, nil
		default:
			return nil, false, err
		}
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

var typePrefix = []byte(`{"type":"`)

// classify checks that the line is one JSON object and finds its type;
// a line of one of the decoded types is not checked (Reader.SetDecoded).
func (l *Line) classify(decoded []string) error {
	// Fast path: every record feedpipe writes starts with its type.
	if rest, ok := bytes.CutPrefix(l.Raw, typePrefix); ok {
		if end := bytes.IndexByte(rest, '"'); end >= 0 && bytes.IndexByte(rest[:end], '\\') < 0 {
			for _, t := range decoded {
				if string(rest[:end]) == t {
					l.Type, l.unchecked = t, true
					return nil
				}
			}
			if !valid(l.Raw) {
				return l.invalid()
			}
			l.Type = string(rest[:end])
			return nil
		}
	}
	if !valid(l.Raw) {
		return l.invalid()
	}
	trimmed := bytes.TrimSpace(l.Raw)
	if trimmed[0] != '{' {
		return &LineError{Line: l.Num, Err: errors.New("not a JSON object")}
	}
	var h struct {
		Type json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal(trimmed, &h); err != nil {
		return &LineError{Line: l.Num, Err: err}
	}
	var t string
	if json.Unmarshal(h.Type, &t) == nil {
		l.Type = t
	}
	return nil
}

// invalid is the error of a line that is not JSON.
func (l *Line) invalid() error {
	var v any
	err := json.Unmarshal(l.Raw, &v)
	if l.Unterminated {
		err = fmt.Errorf("truncated record at end of input: %w", err)
	} else {
		err = fmt.Errorf("invalid JSON: %w; the line begins %q", err, lineStart(l.Raw))
	}
	return &LineError{Line: l.Num, Err: err}
}

// lineStart is the first 40 bytes of a line that is not JSON, for its
// error, cut before a character split in two: the decoder's message says
// what broke, this shows what the line is (a log line, a CSV row, ...).
func lineStart(raw []byte) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) <= 40 {
		return raw
	}
	cut := 40
	for cut > 36 && !utf8.RuneStart(raw[cut]) {
		cut--
	}
	return raw[:cut]
}
