package ndjson

import (
	"bytes"
	"strings"
	"testing"
)

func TestBusNames(t *testing.T) {
	for _, tc := range []struct {
		s    string
		name bool
		id   bool
	}{
		{"due", true, false},
		{"workers.eu-1", true, false},
		{"W_2", true, false},
		{strings.Repeat("a", 64), true, false},
		{strings.Repeat("a", 65), false, false},
		{"", false, false},
		{"-x", false, false},
		{".x", false, false},
		{"a:b", false, false},
		{"{tag}", false, false},
		{"a b", false, false},
		{"1764316800000-0", true, true},
		{"0-1", true, true},
		{"1764316800000", true, false},
		{"1764316800000-", true, false},
		{"-0", false, false},
		{"18446744073709551616-0", true, false}, // past uint64
		{"1-2-3", true, false},
		{"1-+2", false, false},
	} {
		if got := IsBusName(tc.s); got != tc.name {
			t.Errorf("IsBusName(%q) = %v, want %v", tc.s, got, tc.name)
		}
		if got := IsStreamID(tc.s); got != tc.id {
			t.Errorf("IsStreamID(%q) = %v, want %v", tc.s, got, tc.id)
		}
	}
}

func TestAppendBusRef(t *testing.T) {
	ref := &BusRef{Stream: "due", Group: "workers", ID: "5-0"}
	for _, tc := range []struct{ in, want string }{
		{`{}`, `{"bus":{"stream":"due","group":"workers","id":"5-0"}}`},
		{`{"type":"x","v":1}`, `{"type":"x","v":1,"bus":{"stream":"due","group":"workers","id":"5-0"}}`},
		// An old reference is outvoted by the new one, last.
		{`{"type":"x","bus":{"stream":"a","group":"b","id":"1-1"}}`, `{"type":"x","bus":{"stream":"a","group":"b","id":"1-1"},"bus":{"stream":"due","group":"workers","id":"5-0"}}`},
	} {
		got := AppendBusRef([]byte(tc.in), ref)
		if string(got) != tc.want {
			t.Errorf("AppendBusRef(%s) = %s, want %s", tc.in, got, tc.want)
		}
		var rec struct {
			Bus *BusRef `json:"bus"`
		}
		if err := Unmarshal(got, &rec); err != nil || rec.Bus == nil || *rec.Bus != *ref {
			t.Errorf("AppendBusRef(%s) reads back as %+v, %v", tc.in, rec.Bus, err)
		}
	}
}

func TestBusChecks(t *testing.T) {
	good := BusRef{Stream: "due", Group: "workers", ID: "1-0"}
	due := Due{Header: Head(TypeDue), URL: "http://example.org/", Bus: &good}
	if err := due.Check(); err != nil {
		t.Errorf("a due record with a good bus reference: %v", err)
	}
	for _, bad := range []BusRef{{"", "w", "1-0"}, {"due", "a:b", "1-0"}, {"due", "w", "x"}} {
		due.Bus = &bad
		err := due.Check()
		if err == nil || !strings.Contains(err.Error(), "bus.") {
			t.Errorf("due with bus %+v: %v, want an error naming the bus field", bad, err)
		}
		f := Fetch{FetchID: "01937a4e-8e35-7c6b-9f3e-5f8d5e2f6a01", Due: Due{FeedID: "6ba7b811-9dad-51d1-80b4-00c04fd430c8", Bus: &bad}}
		if err := f.Check(); err == nil || !strings.Contains(err.Error(), "due.bus.") {
			t.Errorf("fetch with due.bus %+v: %v, want an error naming due.bus", bad, err)
		}
	}
	ack := BusAck{Header: Head(TypeBusAck), Stream: "parsed", Group: "store", IDs: []string{"1-0", "2-5"}}
	if err := ack.Check(); err != nil {
		t.Errorf("a good bus_ack: %v", err)
	}
	ack.IDs = append(ack.IDs, "../x")
	if err := ack.Check(); err == nil || !strings.Contains(err.Error(), "ids[2]") {
		t.Errorf("a bus_ack with a bad id: %v", err)
	}
}

// FuzzParseLine: ParseLine takes a record as a Reader takes a line that
// is all its input.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{`{"type":"x","v":1}`, `{"type":"due"}`, `[]`, `{`, ``, ` `, `{"type":1}`, `{"a":"\u2028"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if bytes.ContainsAny(raw, "\r\n") {
			return
		}
		got, gotErr := ParseLine(raw)
		want, wantErr := NewReader(bytes.NewReader(raw)).Next()
		if len(bytes.TrimSpace(raw)) == 0 {
			if gotErr == nil {
				t.Fatalf("ParseLine(%q) took an empty record", raw)
			}
			return
		}
		if (gotErr == nil) != (wantErr == nil) || gotErr == nil && got.Type != want.Type {
			t.Fatalf("ParseLine(%q) = %q, %v; a Reader says %q, %v", raw, got.Type, gotErr, want.Type, wantErr)
		}
	})
}
