package storedir

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestPutNewRaw: a payload is written whole under its hash, readable by
// its owner only, in a day directory made when missing, with nothing else
// left in the directory; a payload stored already is kept as it is,
// whether PutNewRaw looks for it first (last names it) or finds it when
// it links its own copy.
func TestPutNewRaw(t *testing.T) {
	s := openTemp(t)
	body := bytes.Repeat([]byte("<rss>new payload</rss>\n"), 300)
	key, sum, err := s.PutNewRaw(day1, body, "")
	if err != nil {
		t.Fatal(err)
	}
	if want, _, _ := s.PutRaw(day1, body); key != want {
		t.Fatalf("PutNewRaw key %q, PutRaw %q", key, want)
	}
	got, err := s.GetRaw(key, 0)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("GetRaw: %v, equal=%v", err, bytes.Equal(got, body))
	}
	st, err := os.Stat(s.Path(key))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	ino := st.Sys().(*syscall.Stat_t).Ino

	for _, last := range []string{"", sum} {
		if k, s2, err := s.PutNewRaw(day1, body, last); err != nil || k != key || s2 != sum {
			t.Fatalf("again (last %q): %q %q %v", last, k, s2, err)
		}
		st, err := os.Stat(s.Path(key))
		if err != nil || st.Sys().(*syscall.Stat_t).Ino != ino {
			t.Errorf("again (last %q): the stored copy was replaced (%v)", last, err)
		}
	}

	other := append(bytes.Clone(body), "<!-- changed -->\n"...)
	key2, _, err := s.PutNewRaw(day1, other, sum)
	if err != nil || key2 == key {
		t.Fatalf("a changed payload: %q %v", key2, err)
	}
	if got, err := s.GetRaw(key2, 0); err != nil || !bytes.Equal(got, other) {
		t.Fatalf("GetRaw of the changed payload: %v", err)
	}
	names, _ := os.ReadDir(filepath.Dir(s.Path(key)))
	if len(names) != 2 {
		t.Errorf("the day directory holds %d files, want the 2 payloads: %v", len(names), names)
	}

	// A day directory removed (pruned) is made again.
	if err := os.RemoveAll(filepath.Dir(s.Path(key))); err != nil {
		t.Fatal(err)
	}
	if k, _, err := s.PutNewRaw(day1, body, ""); err != nil || k != key {
		t.Fatalf("into a removed day directory: %q %v", k, err)
	}
	if got, err := s.GetRaw(key, 0); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("GetRaw after the day was made again: %v", err)
	}
}

// BenchmarkPutNewRaw stores distinct generated-feed-sized payloads into one
// day directory.
func BenchmarkPutNewRaw(b *testing.B) {
	s, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	body := bytes.Repeat([]byte("<item><title>benchmark payload</title></item>\n"), 120)
	i := 0
	for b.Loop() {
		i++
		copy(body, []byte{byte(i), byte(i >> 8), byte(i >> 16), byte(i >> 24)})
		if _, _, err := s.PutNewRaw(day1, body, ""); err != nil {
			b.Fatal(err)
		}
	}
}
