package serve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

const secret = "TOP SECRET: outside the store"

// TestTraversal: no path parameter, encoded or not, and no link planted
// in the store, reaches a file outside the store.
func TestTraversal(t *testing.T) {
	w := newWorld(t)
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte(secret+"\n"), 0o644)
	var e ndjson.Entry
	for _, s := range w.storedEntries() {
		e = s
		break
	}
	for _, path := range []string{
		"/raw/..%2F..%2F..%2Fetc%2Fpasswd", "/raw/%2e%2e%2f%2e%2e%2fcatalog.db", "/raw/..", "/raw/%2Fetc%2Fpasswd",
		"/raw/" + strings.ReplaceAll(outside, "/", "%2F"), "/fetches/..%2F..%2Fcatalog.db", "/raw/../../etc/passwd",
		"/feeds/..%2F..%2Fcatalog.db", "/feeds/..%2Fcatalog.db/entries", "/feeds/%2e%2e/feed.atom", "/entries/..%2F..%2F..",
		"/labels/..%2F..%2Fcatalog.db.atom", "/labels/%2e%2e.rss", "/labels/" + strings.ReplaceAll(outside, "/", "%2F") + ".json",
		"/events?cursor=..%2F..%2Fsecret:0", "/events/stream?last_event_id=" + strings.ReplaceAll(outside, "/", "%2F") + ":0",
		"/entries?label=%2E%2E%2F%2E%2E", "/feeds?label=" + strings.ReplaceAll(outside, "/", "%2F"),
	} {
		r := w.get(path)
		// The router cleans a path with ".." by a redirect to it cleaned,
		// on this server: follow it ("/raw/.." is "/", the web page's
		// feed list).
		if loc := r.header.Get("Location"); r.status/100 == 3 {
			if !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") {
				t.Errorf("%s: redirected off the server, to %q", path, loc)
				continue
			}
			r = w.get(loc)
		}
		home := path == "/raw/.." && strings.Contains(string(r.body), "<title>Feeds · feedpipe</title>")
		if r.status < 400 && !home || strings.Contains(string(r.body), "TOP SECRET") || strings.Contains(string(r.body), "root:") || strings.Contains(string(r.body), "SQLite") {
			t.Errorf("%s: %d %.200s", path, r.status, r.body)
		}
	}
	// A payload replaced by a link to a file outside: refused.
	f, ok, err := w.cat.FetchRecord(context.Background(), e.RawRef.FetchID)
	if err != nil || !ok {
		t.Fatal(err)
	}
	raw := w.st.Path(f.BodyRef.Key)
	os.Remove(raw)
	if err := os.Symlink(outside, raw); err != nil {
		t.Fatal(err)
	}
	if r := w.get("/raw/" + f.FetchID); r.status < 400 || strings.Contains(string(r.body), "TOP SECRET") {
		t.Errorf("a linked payload: %d %.200s", r.status, r.body)
	}
	// An events file replaced by a link to a file outside: not read.
	evs, _ := w.st.DayFiles(storedir.DirEvents)
	fake := filepath.Join(t.TempDir(), "fake.ndjson")
	os.WriteFile(fake, []byte(`{"type":"new_entry","v":1,"title":"`+secret+`"}`+"\n"), 0o644)
	os.Remove(w.st.Path(evs[0]))
	os.Symlink(fake, w.st.Path(evs[0]))
	if r := w.get("/events"); strings.Contains(string(r.body), "TOP SECRET") {
		t.Errorf("a linked events file was read: %d %.300s", r.status, r.body)
	}
	// A fetch record whose payload key climbs out: never read.
	bad := ndjson.Fetch{Header: ndjson.Head(ndjson.TypeFetch), FetchID: "00000000-0000-7000-8000-0000000000aa", Due: f.Due,
		FetchedAt: f.FetchedAt, HTTPStatus: 200, BodyRef: &ndjson.BlobRef{Storage: "localfs", Key: "raw/../../" + filepath.Base(outside)}}
	line, _ := ndjson.Marshal(bad)
	if _, err := w.st.AppendLines(storedir.DayFile(storedir.DirFetches, t0), line, storedir.Durable); err != nil {
		t.Fatal(err)
	}
	if err := w.cat.CatchUpFetches(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := w.get("/raw/" + bad.FetchID); r.status < 400 || strings.Contains(string(r.body), "TOP SECRET") {
		t.Errorf("a climbing payload key: %d %.200s", r.status, r.body)
	}
}

// TestToken: made once, mode 0600, read back; a token file others can
// read, a link, or a short token is refused.
func TestToken(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TokenFile)
	tok, created, err := LoadToken(path)
	if err != nil || !created || len(tok) != 64 {
		t.Fatalf("%q %v %v", tok, created, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if again, created, err := LoadToken(path); err != nil || created || again != tok {
		t.Fatalf("again: %q %v %v", again, created, err)
	}
	os.Chmod(path, 0o644)
	if _, _, err := LoadToken(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("readable by others: %v", err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(path, link)
	if _, _, err := LoadToken(link); err == nil {
		t.Errorf("a link: no error")
	}
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("abc\n"), 0o600)
	if _, _, err := LoadToken(short); err == nil || !strings.Contains(err.Error(), "at least") {
		t.Errorf("a short token: %v", err)
	}
	// A link where the token is to be made: refused, nothing written
	// through it.
	target := filepath.Join(dir, "target")
	os.Symlink(target, filepath.Join(dir, "dangling"))
	if _, _, err := LoadToken(filepath.Join(dir, "dangling")); err == nil {
		t.Errorf("a dangling link: no error")
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the token was written through a link")
	}
}

// FuzzDecodeBody: no body makes the decoder panic; what it accepts is
// one object of the members it knows.
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{`{"url": "https://x.example/f", "labels": ["a"], "interval_sec": 60}`, `{"name": null}`, `{"paused_until": "2026-11-21T00:00:00Z"}`,
		`{"scrape": {"discovery_mode": "list"}}`, `{"scrape": null, "disabled": true}`, `[]`, `{`, `{"url": 1}`, `{} {}`, `{"a": 1}`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var spec FeedSpec
		if err := decodeBody(strings.NewReader(string(b)), &spec); err != nil {
			var eb *errBody
			if !errors.As(err, &eb) || eb.Msg == "" {
				t.Fatalf("an error without a message: %v", err)
			}
		}
		var p FeedPatch
		if decodeBody(strings.NewReader(string(b)), &p) == nil {
			p.pausedUntil()
			p.scrape()
		}
	})
}

// FuzzCursor: a cursor the server lets through is one the catalog
// takes: never an error of SQLite's.
func FuzzCursor(f *testing.F) {
	for _, s := range []string{"1700000000000.12", "-5.0", "0.0", "1.2.3", "abc", "9223372036854775807.9223372036854775807", ".", "1."} {
		f.Add(s)
	}
	st, err := storedir.Open(filepath.Join(f.TempDir(), "store"))
	if err != nil {
		f.Fatal(err)
	}
	cat, err := catalog.Open(context.Background(), st, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { cat.Close() })
	f.Fuzz(func(t *testing.T, s string) {
		if !IsCursor(s) {
			return
		}
		if _, err := cat.AllEntries(context.Background(), catalog.EntryQuery{Cursor: s}); err != nil {
			t.Fatalf("cursor %q: %v", s, err)
		}
	})
}
