package ndjson

import (
	"fmt"
	"strconv"
	"time"
)

// The shapes of the fields that name something in a store: a feed, an
// entry, a fetch, a file. Records on stdin are untrusted input (a replay,
// another tool, a message bus, an attacker), so every such field is checked
// against the exact shape feedpipe gives it before any stage uses it to
// build a path or a key; Line.Decode runs the checks of each record type.

// IsFeedID reports whether s is a feed id: a UUID in its canonical
// lower-case form, such as "6ba7b811-9dad-51d1-80b4-00c04fd430c8".
func IsFeedID(s string) bool { return isUUID(s) }

// IsFetchID reports whether s is a fetch id: a UUID in its canonical
// lower-case form (feed-fetch makes UUIDv7s).
func IsFetchID(s string) bool { return isUUID(s) }

// IsEntryUID reports whether s is an entry uid: 16 lower-case hex digits.
func IsEntryUID(s string) bool { return len(s) == 16 && isLowerHex(s) }

// IsRawKey reports whether s is the key of a stored payload:
// raw/YYYY-MM-DD/<SHA-256 in 64 lower-case hex digits>.zst.
func IsRawKey(s string) bool {
	const prefix, suffix = "raw/", ".zst"
	if len(s) != len(prefix)+10+1+64+len(suffix) || s[:len(prefix)] != prefix || s[len(s)-len(suffix):] != suffix {
		return false
	}
	rest := s[len(prefix) : len(s)-len(suffix)]
	return IsDay(rest[:10]) && rest[10] == '/' && isLowerHex(rest[11:])
}

// IsDayFile reports whether s is the key of a day file of the store's
// directory dir: dir/YYYY-MM-DD.ndjson.
func IsDayFile(s, dir string) bool {
	const suffix = ".ndjson"
	return len(s) == len(dir)+1+10+len(suffix) && s[:len(dir)] == dir && s[len(dir)] == '/' &&
		IsDay(s[len(dir)+1:len(dir)+11]) && s[len(s)-len(suffix):] == suffix
}

// IsDay reports whether s is a date partition's name: a real day written
// YYYY-MM-DD.
func IsDay(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	for i := range len(s) {
		if i != 4 && i != 7 && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	_, err := time.Parse(time.DateOnly, s)
	return err == nil
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := range len(s) {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if !lowerHexDigit(s[i]) {
				return false
			}
		}
	}
	return true
}

func isLowerHex(s string) bool {
	for i := range len(s) {
		if !lowerHexDigit(s[i]) {
			return false
		}
	}
	return true
}

func lowerHexDigit(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

// FieldError reports a record field whose value lacks the shape the store
// gives it. The record is skipped; the stage goes on.
type FieldError struct {
	Record string // the record type
	Field  string // the field's name, dotted for a nested one: "due.feed_id"
	Value  string
	Want   string // the shape it must have, for a person: "a feed id (a UUID)"; "" for any value but none
}

func (e *FieldError) Error() string {
	switch {
	case e.Value == "" && e.Want == "":
		return fmt.Sprintf("%s record: field %s is empty", e.Record, e.Field)
	case e.Value == "":
		return fmt.Sprintf("%s record: field %s is empty: it must be %s", e.Record, e.Field, e.Want)
	}
	v := e.Value
	if len(v) > 80 {
		v = v[:80] + "..."
	}
	return fmt.Sprintf("%s record: field %s is %s: it must be %s", e.Record, e.Field, strconv.Quote(v), e.Want)
}

// The shapes FieldError names.
const (
	wantFeedID   = "a feed id (a UUID in lower case)"
	wantFetchID  = "a fetch id (a UUID in lower case)"
	wantEntryUID = "an entry uid (16 lower-case hex digits)"
	wantRawKey   = "a payload key raw/YYYY-MM-DD/<64 hex digits>.zst"
	wantBusName  = "a name of 1 to 64 letters, digits, '.', '_' or '-'"
	wantStreamID = "a stream entry id such as 1764316800000-0"
	wantMediaKey = "a media key media/<2 hex digits>/<64 hex digits, the same 2 first>"
	wantSHA256   = "a SHA-256 (64 lower-case hex digits)"
)

// checker collects the first failed check of a record.
type checker struct {
	record string
	err    error
}

// field fails the record unless ok; optional lets an empty value pass.
func (c *checker) field(name, value string, ok func(string) bool, want string, optional bool) {
	if c.err != nil || optional && value == "" || ok(value) {
		return
	}
	c.err = &FieldError{Record: c.record, Field: name, Value: value, Want: want}
}

func (c *checker) feedID(name, v string, optional bool) {
	c.field(name, v, IsFeedID, wantFeedID, optional)
}

func (c *checker) fetchID(name, v string, optional bool) {
	c.field(name, v, IsFetchID, wantFetchID, optional)
}

func (c *checker) entryUID(name, v string, optional bool) {
	c.field(name, v, IsEntryUID, wantEntryUID, optional)
}

func (c *checker) dayFile(name, v, dir string, optional bool) {
	c.field(name, v, func(s string) bool { return IsDayFile(s, dir) }, "a file "+dir+"/YYYY-MM-DD.ndjson", optional)
}

func (c *checker) nonEmpty(name, v string) {
	c.field(name, v, func(s string) bool { return s != "" }, "", false)
}
