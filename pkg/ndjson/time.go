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
// survives a round trip through a record unchanged. A time that a record
// cannot hold (see writable) becomes the zero Time.
func At(t time.Time) Time {
	tm := Time{t.UTC().Truncate(time.Millisecond)}
	if !tm.writable() {
		return Time{}
	}
	return tm
}

// writable reports whether t has an RFC 3339 form: not zero, and in the
// years 0000 to 9999 in UTC. A feed dated 9999-12-31T23:59:59-05:00 is in
// the year 10000 in UTC, which no reader could parse back.
func (t Time) writable() bool {
	y := t.UTC().Year()
	return !t.IsZero() && y >= 0 && y <= 9999
}

// String formats t as it appears in a record; "" when it is written as
// null.
func (t Time) String() string {
	if !t.writable() {
		return ""
	}
	return t.UTC().Format(TimeLayout)
}

// MarshalJSON writes t as an RFC 3339 string, or null when it is zero or
// outside the years RFC 3339 can write.
func (t Time) MarshalJSON() ([]byte, error) {
	if !t.writable() {
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
