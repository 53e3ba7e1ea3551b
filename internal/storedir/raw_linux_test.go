package storedir

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestPutNewRawWithoutTmpfile: where O_TMPFILE or /proc is missing,
// payloads go through a named temporary file and a rename, with the same
// outcome.
func TestPutNewRawWithoutTmpfile(t *testing.T) {
	noTmpfile.Store(true)
	t.Cleanup(func() { noTmpfile.Store(false) })
	s := openTemp(t)
	body := bytes.Repeat([]byte("<rss>fallback</rss>\n"), 100)
	for range 2 {
		key, _, err := s.PutNewRaw(day1, body, "")
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.GetRaw(key, 0); err != nil || !bytes.Equal(got, body) {
			t.Fatalf("GetRaw: %v", err)
		}
		if st, err := os.Stat(s.Path(key)); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("stat: %v", err)
		}
		names, _ := os.ReadDir(filepath.Dir(s.Path(key)))
		if len(names) != 1 {
			t.Errorf("the day directory holds %v, want the payload alone", names)
		}
	}
}
