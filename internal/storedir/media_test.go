package storedir

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func sumOf(b []byte) string {
	d := sha256.Sum256(b)
	return hex.EncodeToString(d[:])
}

// TestMediaCommit: a partial file is appended to across opens, and
// becomes the stored file only on commit; the same bytes committed again
// from another download are stored once.
func TestMediaCommit(t *testing.T) {
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("ID3 an episode")
	sum := sumOf(body)
	f, err := st.OpenPartial(7)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(body[:4])
	f.Close()
	if _, err := st.OpenMedia(sum); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a partial is visible as media: %v", err)
	}
	if f, err = st.OpenPartial(7); err != nil {
		t.Fatal(err)
	}
	if fi, _ := f.Stat(); fi.Size() != 4 {
		t.Fatalf("the partial holds %d bytes, want 4", fi.Size())
	}
	f.Seek(0, io.SeekEnd)
	f.Write(body[4:])
	if ids, err := st.Partials(); err != nil || !slices.Equal(ids, []int64{7}) {
		t.Fatalf("partials %v, %v", ids, err)
	}
	key, err := st.CommitMedia(f, 7, sum)
	if err != nil || key != "media/"+sum[:2]+"/"+sum {
		t.Fatalf("commit: %q, %v", key, err)
	}
	m, err := st.OpenMedia(sum)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(m)
	m.Close()
	if string(got) != string(body) {
		t.Fatalf("stored %q", got)
	}
	// The same bytes from another download.
	f, _ = st.OpenPartial(8)
	f.Write(body)
	if key2, err := st.CommitMedia(f, 8, sum); err != nil || key2 != key {
		t.Fatalf("second commit: %q, %v", key2, err)
	}
	if ids, _ := st.Partials(); len(ids) != 0 {
		t.Fatalf("partials left: %v", ids)
	}
	// Day files of records and the partials' directory are no media.
	st.AppendLines("media/2026-11-29.ndjson", []byte("{}\n"), Lazy)
	files, err := st.MediaFiles()
	if err != nil || len(files) != 1 || files[0].Key != key || files[0].Size != int64(len(body)) {
		t.Fatalf("media files %+v, %v", files, err)
	}
	if err := st.RemoveMedia(key); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(st.Root, "media", sum[:2])); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the empty directory stayed: %v", err)
	}
}

// TestMediaKeysChecked: no name but a SHA-256 reaches a file, and a link
// planted in the store leads nowhere outside it.
func TestMediaKeysChecked(t *testing.T) {
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "../../etc/passwd", sumOf(nil)[:63], "E3" + sumOf(nil)[2:]} {
		if _, err := st.OpenMedia(bad); !errors.Is(err, ErrBadKey) {
			t.Errorf("OpenMedia(%q): %v", bad, err)
		}
	}
	if err := st.RemoveMedia("media/partial/1"); !errors.Is(err, ErrBadKey) {
		t.Errorf("RemoveMedia of a partial: %v", err)
	}
	outside := t.TempDir()
	sum := sumOf([]byte("x"))
	os.WriteFile(filepath.Join(outside, sum), []byte("secret"), 0o644)
	os.MkdirAll(filepath.Join(st.Root, "media"), 0o755)
	if err := os.Symlink(outside, filepath.Join(st.Root, "media", sum[:2])); err != nil {
		t.Fatal(err)
	}
	if f, err := st.OpenMedia(sum); err == nil {
		f.Close()
		t.Fatal("a file outside the store was opened through a link")
	}
	if _, err := st.OpenPartial(0); err == nil {
		t.Error("a partial of id 0")
	}
}
