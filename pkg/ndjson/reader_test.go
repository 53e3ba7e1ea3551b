package ndjson

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll collects every record and every line error of input.
func readAll(t testing.TB, input string, max int) (lines []Line, bad []*LineError) {
	t.Helper()
	r := NewReader(strings.NewReader(input))
	if max > 0 {
		r.SetMaxLineBytes(max)
	}
	for {
		line, err := r.Next()
		if errors.Is(err, io.EOF) {
			return lines, bad
		}
		var le *LineError
		if errors.As(err, &le) {
			bad = append(bad, le)
			continue
		}
		if err != nil {
			t.Fatalf("read error: %v", err)
		}
		line.Raw = append([]byte(nil), line.Raw...)
		lines = append(lines, line)
	}
}

var readerCases = []struct {
	name  string
	input string
	max   int
	types []string // types of the good lines, in order
	nums  []int    // their line numbers
	bad   []string // the start of each LineError message
}{
	{name: "empty", input: ""},
	{name: "one record", input: `{"type":"due","v":1}` + "\n", types: []string{"due"}, nums: []int{1}},
	{name: "no final newline", input: `{"type":"due"}`, types: []string{"due"}, nums: []int{1}},
	{name: "crlf", input: "{\"type\":\"entry\"}\r\n{\"type\":\"fetch\"}\r\n", types: []string{"entry", "fetch"}, nums: []int{1, 2}},
	{name: "blank lines skipped but counted", input: "\n  \n{\"type\":\"a\"}\n\n{\"type\":\"b\"}\n", types: []string{"a", "b"}, nums: []int{3, 5}},
	{name: "type not first", input: `{"v":1, "type":"entry"}` + "\n", types: []string{"entry"}, nums: []int{1}},
	{name: "escaped type", input: `{"type":"a\u0062"}` + "\n", types: []string{"ab"}, nums: []int{1}},
	{name: "no type passes", input: `{"x":1}` + "\n", types: []string{""}, nums: []int{1}},
	{name: "non-string type passes untyped", input: `{"type":5}` + "\n", types: []string{""}, nums: []int{1}},
	{
		name:  "malformed line reported with its number, rest read",
		input: "{\"type\":\"a\"}\n{\"type\":\n{\"type\":\"b\"}\n",
		types: []string{"a", "b"}, nums: []int{1, 3},
		bad: []string{"line 2: invalid JSON"},
	},
	{
		name:  "a line not JSON shows how it begins, escaped, cut at 40 bytes before a split character",
		input: "2026-11-29 \x1b[31mERROR\x1b[0m disk full on /var/lib/feedpipe, retrying\n" + "x" + strings.Repeat("é", 30) + "\n",
		bad: []string{
			`line 1: invalid JSON: invalid character '-' after top-level value; the line begins "2026-11-29 \x1b[31mERROR\x1b[0m disk full on /"`,
			`line 2: invalid JSON: invalid character 'x' looking for beginning of value; the line begins "x` + strings.Repeat("é", 19) + `"`,
		},
	},
	{name: "array is not an object", input: "[1,2]\n", bad: []string{"line 1: not a JSON object"}},
	{name: "bare string", input: "\"x\"\n", bad: []string{"line 1: not a JSON object"}},
	{name: "torn last line", input: "{\"type\":\"a\"}\n{\"type\":\"b\",\"x\":", types: []string{"a"}, nums: []int{1}, bad: []string{"line 2: truncated record"}},
	{
		name:  "too long line skipped",
		input: `{"type":"a"}` + "\n" + `{"type":"big","pad":"` + strings.Repeat("x", 200) + `"}` + "\n" + `{"type":"c"}` + "\n",
		max:   64, types: []string{"a", "c"}, nums: []int{1, 3},
		bad: []string{"line 2: line too long"},
	},
	{
		name:  "too long last line without newline",
		input: `{"type":"a"}` + "\n" + strings.Repeat("y", 100),
		max:   64, types: []string{"a"}, nums: []int{1},
		bad: []string{"line 2: line too long"},
	},
}

func TestReader(t *testing.T) {
	for _, tc := range readerCases {
		t.Run(tc.name, func(t *testing.T) {
			lines, bad := readAll(t, tc.input, tc.max)
			if len(lines) != len(tc.types) {
				t.Fatalf("got %d records, want %d (%+v)", len(lines), len(tc.types), lines)
			}
			for i, l := range lines {
				if l.Type != tc.types[i] || l.Num != tc.nums[i] {
					t.Errorf("record %d: type %q line %d, want %q line %d", i, l.Type, l.Num, tc.types[i], tc.nums[i])
				}
			}
			if len(bad) != len(tc.bad) {
				t.Fatalf("got line errors %v, want %v", bad, tc.bad)
			}
			for i, want := range tc.bad {
				if got := bad[i].Error(); !strings.HasPrefix(got, want) {
					t.Errorf("line error %d = %q, want %q", i, got, want)
				}
			}
		})
	}
}

func TestReaderLongLineWithinLimitAcrossBufferChunks(t *testing.T) {
	big := `{"type":"entry","content":"` + strings.Repeat("z", 300<<10) + `"}`
	r := NewReader(iotest.OneByteReader(strings.NewReader(big + "\n")))
	line, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if line.Type != "entry" || len(line.Raw) != len(big) {
		t.Fatalf("type %q, %d bytes; want entry, %d", line.Type, len(line.Raw), len(big))
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("want EOF, got %v", err)
	}
}

func TestReaderUnterminatedFlag(t *testing.T) {
	lines, _ := readAll(t, "{\"type\":\"a\"}\n{\"type\":\"b\"}", 0)
	if lines[0].Unterminated || !lines[1].Unterminated {
		t.Fatalf("Unterminated flags = %v, %v; want false, true", lines[0].Unterminated, lines[1].Unterminated)
	}
}

func TestReaderPropagatesReadErrors(t *testing.T) {
	boom := errors.New("disk on fire")
	r := NewReader(io.MultiReader(strings.NewReader("{\"type\":\"a\"}\n"), iotest.ErrReader(boom)))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("got %v, want %v", err, boom)
	}
}

func TestLineDecodeErrorNamesLineAndType(t *testing.T) {
	lines, _ := readAll(t, "\n{\"type\":\"entry\",\"title\":5}\n", 0)
	var e Entry
	err := lines[0].Decode(&e)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), `bad "entry" record`) {
		t.Fatalf("got %v", err)
	}
}

// FuzzReader feeds arbitrary bytes to the reader: it must never panic, never
// loop, report every line error with a line number inside the input, and
// return each good record as valid JSON.
func FuzzReader(f *testing.F) {
	for _, tc := range readerCases {
		f.Add([]byte(tc.input))
	}
	f.Add([]byte("{\"type\":\"x\"}\r\n\r\n\x00\xff{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(strings.NewReader(string(data)))
		r.SetMaxLineBytes(256)
		maxLine := strings.Count(string(data), "\n") + 1
		for i := 0; ; i++ {
			if i > len(data)+1 {
				t.Fatal("reader did not reach EOF")
			}
			line, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			var le *LineError
			if errors.As(err, &le) {
				if le.Line < 1 || le.Line > maxLine {
					t.Fatalf("line error at %d, input has %d lines", le.Line, maxLine)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			var v map[string]any
			if jerr := line.Decode(&v); jerr != nil {
				t.Fatalf("good line %d does not decode: %v", line.Num, jerr)
			}
		}
	})
}

// outcomes reads input as a stage that decodes every entry and fetch
// record does, with or without SetDecoded: per line, what was wrong with
// it, or its type.
func outcomes(t testing.TB, input string, decoded bool) []string {
	r := NewReader(strings.NewReader(input))
	r.SetMaxLineBytes(256)
	if decoded {
		r.SetDecoded(TypeEntry, TypeFetch)
	}
	var got []string
	for i := 0; ; i++ {
		if i > len(input)+1 {
			t.Fatal("reader did not reach EOF")
		}
		line, err := r.Next()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err == nil {
			switch line.Type {
			case TypeEntry:
				if _, ok := line.EntryKey(); !ok {
					err = line.Decode(new(Entry))
				}
			case TypeFetch:
				err = line.Decode(new(Fetch))
			}
		}
		var le *LineError
		if err != nil && !errors.As(err, &le) {
			t.Fatal(err)
		}
		if err != nil {
			got = append(got, err.Error())
		} else {
			got = append(got, fmt.Sprintf("line %d: %q", line.Num, line.Type))
		}
	}
}

// TestSetDecoded: a line left unchecked by the reader is reported by its
// decoding as the reader would have reported it.
func TestSetDecoded(t *testing.T) {
	input := strings.Join([]string{
		`{"type":"entry","title":"x"`,
		`{"type":"entry","title":1}`,
		`{"type":"fetch","v":1} {}`,
		`{"type":"fetch",` + "\x01" + `}`,
		`{"type":"due","v":}`,
		`{"type":"entry","entry_uid":"9c1b4e0c0b2f6a71","feed_id":"6ba7b811-9dad-51d1-80b4-00c04fd430c8","content_hash":"h"}`,
		`{"type":"entry","title":"torn`,
	}, "\n")
	want := outcomes(t, input, false)
	if got := outcomes(t, input, true); !slices.Equal(got, want) {
		t.Fatalf("with SetDecoded:\n%s\nwithout:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(want[0], "invalid JSON") || !strings.Contains(want[6], "truncated record") {
		t.Fatalf("not the errors this test is about:\n%s", strings.Join(want, "\n"))
	}
}

// FuzzSetDecoded checks on any input that SetDecoded changes no line's
// outcome.
func FuzzSetDecoded(f *testing.F) {
	for _, tc := range readerCases {
		f.Add([]byte(tc.input))
	}
	for _, tc := range keyCases {
		f.Add([]byte(keyCaseLine(tc.from, tc.to) + "\n" + `{"type":"fetch","v":1,"fetch_id":5}` + "\n" + keyEntry[:40]))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want := outcomes(t, string(data), false)
		if got := outcomes(t, string(data), true); !slices.Equal(got, want) {
			t.Fatalf("with SetDecoded:\n%s\nwithout:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}
