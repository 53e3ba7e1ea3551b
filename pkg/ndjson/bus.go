package ndjson

import "strconv"

// TypeBusAck is the record feed-bus take --store-fetches writes after each
// group of records it handed to the coordinator's pipeline: feed-bus put
// acknowledges the group's stream entries when the record reaches it, which
// it does only once feed-store has committed what came before it.
const TypeBusAck = "bus_ack"

// BusRef names the stream entry a record was taken from: the "bus" member
// feed-bus take adds to each record it writes (a due record keeps it in
// its struct, so that feed-fetch carries it into the fetch record's due).
// feed-bus put acknowledges the entry when it appends the record, or the
// output that answers it, to the next stream (docs/bus.md).
type BusRef struct {
	Stream string `json:"stream"` // the stream, without the deployment's prefix
	Group  string `json:"group"`  // the consumer group that took the entry
	ID     string `json:"id"`     // the entry's id, such as "1764316800000-0"
}

// BusAck acknowledges stream entries whose records the coordinator's
// pipeline consumed (feed-dedup and feed-store pass no entry or fetch
// record on, so nothing else could carry their ids to feed-bus put).
type BusAck struct {
	Header
	Stream string   `json:"stream"`
	Group  string   `json:"group"`
	IDs    []string `json:"ids"`
}

// IsBusName reports whether s can name a stream, a consumer group or a
// consumer of feed-bus: 1 to 64 letters, digits, '.', '_' or '-', not
// starting with '.' or '-'. Such a name is part of Redis keys, so that no
// record can name a key of another deployment or a hash tag.
func IsBusName(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] == '.' || s[0] == '-' {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// IsStreamID reports whether s is the id of a Redis stream entry: two
// decimal numbers (milliseconds and a sequence) joined by '-'.
func IsStreamID(s string) bool {
	ms, seq, ok := cut(s, '-')
	return ok && isDecimal(ms) && isDecimal(seq)
}

func cut(s string, sep byte) (before, after string, ok bool) {
	for i := range len(s) {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func isDecimal(s string) bool {
	if len(s) == 0 || len(s) > 20 {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// check fails c when the reference at field lacks a part's shape.
func (r *BusRef) check(c *checker, field string) {
	c.field(field+".stream", r.Stream, IsBusName, wantBusName, false)
	c.field(field+".group", r.Group, IsBusName, wantBusName, false)
	c.field(field+".id", r.ID, IsStreamID, wantStreamID, false)
}

// Check reports what makes a bus_ack record unusable: its stream and group
// must be names, its ids stream entry ids.
func (a *BusAck) Check() error {
	c := checker{record: TypeBusAck}
	c.field("stream", a.Stream, IsBusName, wantBusName, false)
	c.field("group", a.Group, IsBusName, wantBusName, false)
	for i, id := range a.IDs {
		c.field("ids["+strconv.Itoa(i)+"]", id, IsStreamID, wantStreamID, false)
	}
	return c.err
}

func appendBusRef(b []byte, x *BusRef) []byte {
	b = appendStr(b, `{"stream":`, x.Stream)
	b = appendStr(b, `,"group":`, x.Group)
	b = appendStr(b, `,"id":`, x.ID)
	return append(b, '}')
}

// AppendBusRef appends `"bus":{...}` as the last member of the JSON
// object line (without its newline), replacing none: a reader of the line
// takes the last of repeated members, so that the reference appended wins
// over one the record had. line must end in '}'.
func AppendBusRef(line []byte, r *BusRef) []byte {
	n := len(line) - 1 // the closing brace
	out := make([]byte, 0, len(line)+len(r.Stream)+len(r.Group)+len(r.ID)+40)
	out = append(out, line[:n]...)
	if n > 1 || line[0] != '{' { // not an empty object
		out = append(out, ',')
	}
	out = appendBusRef(append(out, `"bus":`...), r)
	return append(out, '}')
}
