package storedir

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var day1 = time.Date(2026, 11, 21, 23, 59, 0, 0, time.UTC)

func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOpenCreatesLayout(t *testing.T) {
	s := openTemp(t)
	for _, d := range []string{DirRaw, DirFetches, DirEntries, DirEvents} {
		if st, err := os.Stat(filepath.Join(s.Root, d)); err != nil || !st.IsDir() {
			t.Errorf("%s not created: %v", d, err)
		}
	}
}

func TestOpenReportsUncreatableStore(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plainfile")
	os.WriteFile(file, []byte("x"), 0o644)
	_, err := Open(filepath.Join(file, "store"))
	if err == nil || !strings.Contains(err.Error(), "cannot create") || !strings.Contains(err.Error(), "plainfile") {
		t.Fatalf("got %v, want a clear 'cannot create <path>' error", err)
	}
	if _, err := Open(""); err == nil || !strings.Contains(err.Error(), "FEEDPIPE_STORE") {
		t.Fatalf("empty root: %v", err)
	}
}

func readTypes(t *testing.T, s *Store, key string, from int64) (types []string, end int64, bad int) {
	t.Helper()
	end, bad, err := s.ReadLog(key, from, func(l ndjson.Line) error {
		types = append(types, l.Type)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return types, end, bad
}

func TestAppendAndReadLog(t *testing.T) {
	s := openTemp(t)
	key := DayFile(DirEntries, day1)
	if key != "entries/2026-11-21.ndjson" {
		t.Fatalf("DayFile = %q", key)
	}
	off, err := s.AppendLines(key, []byte("{\"type\":\"a\"}\n{\"type\":\"b\"}\n"), Durable)
	if err != nil || off != 0 {
		t.Fatalf("first append at %d, %v", off, err)
	}
	off2, err := s.AppendLines(key, []byte("{\"type\":\"c\"}\n"), Lazy)
	if err != nil || off2 != 26 {
		t.Fatalf("second append at %d, %v; want 26", off2, err)
	}
	types, end, bad := readTypes(t, s, key, 0)
	if strings.Join(types, ",") != "a,b,c" || end != 39 || bad != 0 {
		t.Fatalf("read %v end %d bad %d", types, end, bad)
	}
	types, _, _ = readTypes(t, s, key, off2)
	if strings.Join(types, ",") != "c" {
		t.Fatalf("read from offset: %v", types)
	}
	if types, end, _ := readTypes(t, s, "entries/1999-01-01.ndjson", 0); len(types) != 0 || end != 0 {
		t.Fatal("missing file has records")
	}
}

func TestTornTailIsIgnoredThenCut(t *testing.T) {
	s := openTemp(t)
	key := "events/2026-11-21.ndjson"
	os.WriteFile(s.Path(key), []byte("{\"type\":\"a\"}\n{\"type\":\"b\",\"x\":"), 0o644)
	types, end, bad := readTypes(t, s, key, 0)
	if strings.Join(types, ",") != "a" || end != 13 || bad != 0 {
		t.Fatalf("torn tail: read %v end %d bad %d", types, end, bad)
	}
	// A complete record that only lacks its newline is still not read: a
	// writer may be in the middle of it.
	os.WriteFile(s.Path(key), []byte("{\"type\":\"a\"}\n{\"type\":\"b\"}"), 0o644)
	if types, _, _ := readTypes(t, s, key, 0); len(types) != 1 {
		t.Fatalf("unterminated line read: %v", types)
	}
	for _, torn := range []string{"{\"type\":\"b\",\"x\":", strings.Repeat("y", 200<<10), "{"} {
		os.WriteFile(s.Path(key), []byte("{\"type\":\"a\"}\n"+torn), 0o644)
		off, err := s.AppendLines(key, []byte("{\"type\":\"c\"}\n"), Durable)
		if err != nil || off != 13 {
			t.Fatalf("append after a torn tail of %d bytes: offset %d, %v", len(torn), off, err)
		}
		got, _ := os.ReadFile(s.Path(key))
		if string(got) != "{\"type\":\"a\"}\n{\"type\":\"c\"}\n" {
			t.Fatalf("file after cutting a torn tail of %d bytes: %q", len(torn), got)
		}
	}
	// A file that is one torn line is emptied.
	os.WriteFile(s.Path(key), []byte("{\"type\":"), 0o644)
	if off, err := s.AppendLines(key, []byte("{\"type\":\"d\"}\n"), Durable); err != nil || off != 0 {
		t.Fatalf("offset %d, %v", off, err)
	}
}

func TestWriteFileAtomicLeavesNoTemporaries(t *testing.T) {
	s := openTemp(t)
	for _, content := range []string{"one\n", "two\n"} {
		if err := s.WriteFileAtomic("state/x.json", []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(s.Path("state/x.json"))
	if string(got) != "two\n" {
		t.Fatalf("content %q", got)
	}
	names, _ := os.ReadDir(s.Path("state"))
	if len(names) != 1 {
		t.Fatalf("directory holds %d files, want 1", len(names))
	}
}

func TestRawRoundTrip(t *testing.T) {
	s := openTemp(t)
	body := bytes.Repeat([]byte("<rss>payload</rss>\n"), 1000)
	key, sum, err := s.PutRaw(day1, body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key, "raw/2026-11-21/"+sum) || !strings.HasSuffix(key, ".zst") || len(sum) != 64 {
		t.Fatalf("key %q sum %q", key, sum)
	}
	st, _ := os.Stat(s.Path(key))
	if st.Size() >= int64(len(body))/10 {
		t.Errorf("stored %d bytes for %d: not compressed", st.Size(), len(body))
	}
	got, err := s.GetRaw(key, 0)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("GetRaw: %v, equal=%v", err, bytes.Equal(got, body))
	}
	key2, _, _ := s.PutRaw(day1, body)
	if key2 != key {
		t.Fatal("same payload stored twice")
	}
	if _, err := s.GetRaw(key, 100); !errors.Is(err, ErrRawTooLarge) {
		t.Fatalf("cap: %v", err)
	}
	if _, err := s.GetRaw("raw/2026-11-21/missing.zst", 0); err == nil || !strings.Contains(err.Error(), "missing.zst") {
		t.Fatalf("missing payload: %v", err)
	}
}
