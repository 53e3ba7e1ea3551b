package ndjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestWriterOneLinePerRecordNoHTMLEscaping(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	e := Entry{Header: Head(TypeEntry), Title: "a <b> & c\nd", Published: At(time.Date(2026, 11, 20, 8, 30, 0, 0, time.FixedZone("X", 3600)))}
	if err := w.Write(e); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRaw([]byte(`{"type":"other","x":1}`)); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Fatal("wrote before Flush without autoflush")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", out)
	}
	for _, want := range []string{`{"type":"entry","v":1,`, `"title":"a <b> & c\nd"`, `"published":"2026-11-20T07:30:00Z"`, `"updated":null`, `"authors":null`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("line %q lacks %q", lines[0], want)
		}
	}
	if lines[1] != `{"type":"other","x":1}` {
		t.Errorf("raw line changed: %q", lines[1])
	}
}

func TestWriterAutoFlush(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.SetAutoFlush(true)
	if err := w.Write(Head(TypeDue)); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "{\"type\":\"due\",\"v\":1}\n" {
		t.Fatalf("got %q", buf.String())
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestWriterFlushReportsLostOutput(t *testing.T) {
	w := NewWriter(failWriter{})
	if err := w.Write(Head(TypeDue)); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err == nil {
		t.Fatal("Flush to a failing writer returned nil")
	}
}

func TestRecordRoundTrip(t *testing.T) {
	f := Fetch{
		Header: Head(TypeFetch), FetchID: "0193", Due: Due{Header: Head(TypeDue), FeedID: "f", Labels: []string{"x"}},
		FetchedAt: At(time.Date(2026, 1, 2, 3, 4, 5, 678_900_000, time.UTC)), HTTPStatus: 200,
		BodyRef: &BlobRef{Storage: "localfs", Key: "raw/2026-01-02/ab.zst"},
		Error:   &Error{Class: ClassTransient, Code: "http_500", Message: "server said 500"},
		Parse:   &Parse{Format: "rss", SkipHours: []int{1, 2}},
	}
	b, err := Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var got Fetch
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	again, _ := Marshal(got)
	if !bytes.Equal(b, again) {
		t.Fatalf("round trip changed the record:\n%s%s", b, again)
	}
	if got.FetchedAt.String() != "2026-01-02T03:04:05.678Z" {
		t.Errorf("fetched_at = %s", got.FetchedAt)
	}
}

func TestTimeOutsideRFC3339IsNull(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.FixedZone("", -5*3600)), // 10000 in UTC
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		b, err := At(tm).MarshalJSON()
		if err != nil || string(b) != "null" {
			t.Errorf("%v: %s, %v; want null", tm, b, err)
		}
	}
}

func TestTimeJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // String() after decoding; "" for zero
		err  bool
	}{
		{in: `null`}, {in: `""`},
		{in: `"2026-11-21T10:00:00+02:00"`, want: "2026-11-21T08:00:00Z"},
		{in: `"2026-11-21T10:00:00.5Z"`, want: "2026-11-21T10:00:00.5Z"},
		{in: `"yesterday"`, err: true},
		{in: `12`, err: true},
	} {
		var tm Time
		err := json.Unmarshal([]byte(tc.in), &tm)
		if (err != nil) != tc.err {
			t.Errorf("%s: err = %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if tm.String() != tc.want {
			t.Errorf("%s: got %q, want %q", tc.in, tm.String(), tc.want)
		}
	}
}
