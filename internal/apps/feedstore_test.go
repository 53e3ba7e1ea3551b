package apps

import (
	"bytes"
	"testing"
)

// TestEventTee: --notify-file gets the feed_disabled and feed_reenabled
// lines, whole, however the writes cut them; stdout gets everything.
func TestEventTee(t *testing.T) {
	stream := `{"type":"new_entry","v":1,"title":"{\"type\":\"feed_disabled\""}` + "\n" +
		`{"type":"feed_disabled","v":1,"feed_id":"a"}` + "\n" +
		`{"type":"decision","v":1}` + "\n" +
		`{"type":"feed_reenabled","v":1,"feed_id":"b"}` + "\n" +
		`{"type":"feed_disabledX"}` + "\n"
	want := `{"type":"feed_disabled","v":1,"feed_id":"a"}` + "\n" + `{"type":"feed_reenabled","v":1,"feed_id":"b"}` + "\n"
	for _, size := range []int{1, 2, 7, 23, 24, 100, len(stream)} {
		var out, file bytes.Buffer
		tee := &eventTee{w: &out, file: &file}
		for p := []byte(stream); len(p) > 0; {
			k := min(size, len(p))
			if n, err := tee.Write(p[:k]); n != k || err != nil {
				t.Fatal(n, err)
			}
			p = p[k:]
		}
		if out.String() != stream || file.String() != want {
			t.Errorf("writes of %d: stdout %q, file %q; want the stream, and %q", size, out.String(), file.String(), want)
		}
	}
}
