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
	b := t.appendJSON(make([]byte, 0, len(TimeLayout)+2))
	return string(b[1 : len(b)-1])
}

// MarshalJSON writes t as an RFC 3339 string, or null when it is zero or
// outside the years RFC 3339 can write.
func (t Time) MarshalJSON() ([]byte, error) {
	return t.appendJSON(make([]byte, 0, len(TimeLayout)+2)), nil
}

// appendJSON appends t as MarshalJSON writes it. It formats TimeLayout by
// hand: time.AppendFormat, which interprets the layout on every call, was
// some 7% of feed-store's CPU.
func (t Time) appendJSON(b []byte) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	u := t.UTC()
	year, month, day := u.Date()
	if year < 0 || year > 9999 {
		return append(b, "null"...)
	}
	hour, minute, sec := u.Clock()
	b = append(b, '"')
	b = append2(b, year/100)
	b = append2(b, year%100)
	b = append2(append(b, '-'), int(month))
	b = append2(append(b, '-'), day)
	b = append2(append(b, 'T'), hour)
	b = append2(append(b, ':'), minute)
	b = append2(append(b, ':'), sec)
	// Milliseconds, truncated as AppendFormat does, without trailing
	// zeros; none at all when they are zero.
	if ms := u.Nanosecond() / 1e6; ms != 0 {
		digits := [3]byte{byte('0' + ms/100), byte('0' + ms/10%10), byte('0' + ms%10)}
		n := 3
		for digits[n-1] == '0' {
			n--
		}
		b = append(append(b, '.'), digits[:n]...)
	}
	return append(b, 'Z', '"')
}

// append2 appends n, 0 to 99, as two digits.
func append2(b []byte, n int) []byte {
	return append(b, byte('0'+n/10), byte('0'+n%10))
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
