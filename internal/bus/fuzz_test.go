package bus

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// FuzzCheckFetch: whatever a stream entry holds, checkFetch does not
// panic, and what it accepts has a payload that hashes to its
// body_sha256, under a key of the raw store's shape, within the cap.
func FuzzCheckFetch(f *testing.F) {
	g := newFetchGroup(&testing.T{}, 1, "<rss>seed</rss>")
	f.Add([]byte(g.record), []byte(g.line), g.body)
	f.Add([]byte(g.record), []byte(nil), g.body)
	f.Add([]byte(g.record), []byte(g.line), []byte("not zstd"))
	f.Add([]byte(`{"type":"fetch","v":1,"fetch_id":"x"}`), []byte(`{}`), []byte{})
	f.Add([]byte(`{"type":"fetch","v":1,"body_ref":{"storage":"localfs","key":"raw/../../etc/passwd"}}`), []byte(nil), []byte(nil))
	f.Fuzz(func(t *testing.T, record, line, body []byte) {
		const max = 1 << 16
		c, err := checkFetch(record, line, body, max)
		if err != nil {
			if _, ok := err.(*refusal); !ok {
				t.Fatalf("not a refusal: %T %v", err, err)
			}
			return
		}
		if c.rec.BodyRef != nil {
			if !ndjson.IsRawKey(c.rec.BodyRef.Key) {
				t.Fatalf("accepted the key %q", c.rec.BodyRef.Key)
			}
			if body != nil {
				sum := sha256.Sum256(c.body)
				if hex.EncodeToString(sum[:]) != c.rec.BodySHA256 || len(c.body) > max {
					t.Fatalf("accepted a payload that is not its sha256's, or over the cap")
				}
			}
		}
		if !bytes.HasSuffix(c.line, []byte("\n")) || bytes.Contains(c.line, []byte(`"bus":`)) && c.stored.Due.Bus != nil {
			t.Fatalf("fetches/ line %q", c.line)
		}
	})
}

// FuzzPrepare: put reads any line without panicking; a bus member it
// takes for an acknowledgement names a stream, a group and an id of their
// shapes.
func FuzzPrepare(f *testing.F) {
	for _, s := range []string{rec1, `{"type":"x","bus":{"stream":"a","group":"g","id":"1-0"}}`,
		`{"type":"fetch","v":1,"due":{"bus":{"stream":"due","group":"w","id":"2-3"}}}`,
		`{"type":"due","v":1,"feed_id":"6ba7b811-9dad-51d1-80b4-00c04fd430c8","scheduled_at":"2026-11-28T00:00:00Z","url":"u"}`,
		`{"type":"bus_ack","v":1,"stream":"parsed","group":"store","ids":["1-0"]}`, `{"type":"entry","raw_ref":{"fetch_id":"x"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		l, err := ndjson.ParseLine(raw)
		if err != nil {
			return
		}
		p := &putter{b: &bus{cfg: &Config{}}}
		it, err := p.prepare(context.Background(), l)
		if err != nil {
			return
		}
		for _, a := range it.acks {
			if checkRef(&a, "bus") != nil {
				t.Fatalf("took a bad reference %+v", a)
			}
		}
		if len(it.fields) > 0 {
			out := []byte(it.fields[1].(string))
			if _, err := ndjson.ParseLine(out); err != nil {
				t.Fatalf("put would append %q, not a record (from %q)", out, raw)
			}
		}
	})
}

// FuzzParseCursor: a cursor read from Redis is taken only in the shape
// put writes it, a file of the events log and an offset.
func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"events/2026-11-28.ndjson 0", "events/2026-11-28.ndjson 12345", "events/../x 1", "entries/2026-11-28.ndjson 3", "events/2026-11-28.ndjson -1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		file, off, err := parseCursor(s)
		if err != nil {
			return
		}
		if !ndjson.IsDayFile(file, "events") || off < 0 {
			t.Fatalf("took %q as file %q offset %d", s, file, off)
		}
	})
}
