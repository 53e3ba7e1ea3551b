package ndjson

import (
	"bytes"
	"fmt"
	"time"
)

// TimeLayout is how every timestamp in a record is written: RFC 3339 in UTC,
// with a fractional second only when it is not zero (at most milliseconds).
const TimeLayout = "2006-01-02T15:04:05.999Z07:00"

// Time is a timestamp that encodes as an RFC 3339 UTC string, or as null
// when it is the zero time.
type Time struct{ time.Time }

// At wraps t, truncated to the millisecond and moved to UTC, so that a value
// survives a round trip through a record unchanged.
func At(t time.Time) Time {
	if t.IsZero() {
		return Time{}
	}
	return Time{t.UTC().Truncate(time.Millisecond)}
}

// String formats t as it appears in a record; the zero time is "".
func (t Time) String() string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(TimeLayout)
}

// MarshalJSON writes t as an RFC 3339 string, or null when it is zero.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	b := make([]byte, 0, len(TimeLayout)+2)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, TimeLayout)
	return append(b, '"'), nil
}

// UnmarshalJSON accepts null, "" and any RFC 3339 timestamp.
func (t *Time) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) || bytes.Equal(b, []byte(`""`)) {
		*t = Time{}
		return nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("ndjson: time must be an RFC 3339 string, got %.40s", b)
	}
	parsed, err := time.Parse(time.RFC3339Nano, string(b[1:len(b)-1]))
	if err != nil {
		return fmt.Errorf("ndjson: bad time %s: %w", b, err)
	}
	*t = Time{parsed.UTC()}
	return nil
}
