package progress

import (
	"bytes"
	"testing"
)

// TestLogLinesClearTheStatus: a log line written through the Line clears
// the status first (it would run into it otherwise), and the status is
// shown again after it; once Done, a log line still clears the line (a
// status another process shows there).
func TestLogLinesClearTheStatus(t *testing.T) {
	var out bytes.Buffer
	l := New(&out)
	l.Show("fetching: %d of %d", 3, 10)
	if _, err := l.Write([]byte("level=WARN msg=\"fetch failed\"\n")); err != nil {
		t.Fatal(err)
	}
	l.Done()
	l.Write([]byte("level=INFO msg=\"fetch done\"\n"))
	want := "\r\x1b[Kfetching: 3 of 10" +
		"\r\x1b[Klevel=WARN msg=\"fetch failed\"\nfetching: 3 of 10" +
		"\r\x1b[K" +
		"\r\x1b[Klevel=INFO msg=\"fetch done\"\n"
	if out.String() != want {
		t.Errorf("wrote\n%q\nwant\n%q", out.String(), want)
	}
}
