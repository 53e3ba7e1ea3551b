package apps

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/feedpipe/feedpipe/internal/cmdkit"
)

// TestFlags runs feed-parse over a payload file with the flags and
// environment people use.
func TestFlags(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	feed := filepath.Join(dir, "feed.xml")
	// windows-1251 without a declaration: only --content-type says so.
	doc := "<rss version=\"2.0\"><channel><item><title>\xcd\xee\xe2\xee\xf1\xf2\xe8</title><link>/a?utm_source=x&amp;ref=y</link></item>" +
		"<item><title>deep</title><x><x><x><x><x></x></x></x></x></x></item></channel></rss>"
	if err := os.WriteFile(feed, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		status int
		stdout []string // substrings
		stderr string
	}{
		{"defaults", nil, []string{"--base-url", "https://example.org/feed", feed}, 0,
			[]string{`"canonical_link":"https://example.org/a?ref=y"`, `"title":"Íîâîñòè"`,
				`"type":"fetch"`, `"reason":"file"`, `"body_ref":null`, `"parse":{"format":"rss"`}, ""},
		{"content type", nil, []string{"--base-url", "https://example.org/feed", "--content-type", "text/xml; charset=windows-1251", feed}, 0,
			[]string{`"title":"Новости"`}, ""},
		{"keep tracking parameters", nil, []string{"--keep-tracking-params", "--base-url", "https://example.org/feed", feed}, 0,
			[]string{`"canonical_link":"https://example.org/a?utm_source=x&ref=y"`}, ""},
		{"more tracking parameters", map[string]string{"FEEDPIPE_TRACKING_PARAMS": "ref, other_*"}, []string{"--base-url", "https://example.org/feed", feed}, 0,
			[]string{`"canonical_link":"https://example.org/a"`}, ""},
		{"depth from the older variable", map[string]string{"MAX_XML_DEPTH": "6"}, []string{"--base-url", "https://example.org/feed", feed}, 1,
			nil, "nests elements more than 6 deep"},
		{"depth flag over the variable", map[string]string{"MAX_XML_DEPTH": "6"}, []string{"--max-xml-depth", "100", "--base-url", "https://example.org/feed", feed}, 0,
			[]string{`"title":"deep"`}, ""},
		{"items", nil, []string{"--max-items", "1", "--base-url", "https://example.org/feed", feed}, 1, nil, "too many items: more than 1"},
		{"body size", nil, []string{"--max-body-bytes", "100", "--base-url", "https://example.org/feed", feed}, 1, nil, "over the size limit"},
		{"content type without files", nil, []string{"--content-type", "text/xml"}, 2, nil, "--content-type goes with FILE arguments"},
		{"bad depth", nil, []string{"--max-xml-depth", "0", feed}, 2, nil, "--max-xml-depth must be a positive number"},
		{"help names the record of a file", nil, []string{"--help"}, 0, []string{`then a "fetch" record with its`, `whose due.reason is "file"`}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"MAX_XML_DEPTH", "FEEDPIPE_MAX_XML_DEPTH", "FEEDPIPE_TRACKING_PARAMS"} {
				t.Setenv(k, tt.env[k])
				if tt.env[k] == "" {
					os.Unsetenv(k)
				}
			}
			var stdout, stderr bytes.Buffer
			a := FeedParse()
			a.Writer, a.ErrWriter, a.Reader = &stdout, &stderr, strings.NewReader("")
			status := cmdkit.Run(a, append([]string{"feed-parse", "--store", store}, tt.args...))
			if _, err := os.Stat(store); err == nil {
				t.Errorf("feed-parse made the store %s: files need none", store)
			}
			if status != tt.status {
				t.Errorf("status %d, want %d; stderr:\n%s", status, tt.status, stderr.String())
			}
			for _, want := range tt.stdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %s:\n%s", want, stdout.String())
				}
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, stderr.String())
			}
		})
	}
}

// TestTuneGC: GOGC=400 under a limit of 512 MiB and 256 MiB a worker,
// unless GOGC or GOMEMLIMIT is set.
func TestTuneGC(t *testing.T) {
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	defer func() { debug.SetGCPercent(percent); debug.SetMemoryLimit(limit) }()
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	tuneGC(2)
	if p, l := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64); p != 400 || l != 1<<30 {
		t.Errorf("GOGC %d, limit %d; want 400 and 1 GiB", p, l)
	}
	t.Setenv("GOGC", "50")
	tuneGC(2)
	if p, l := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64); p != 100 || l != math.MaxInt64 {
		t.Errorf("with GOGC set: GOGC %d, limit %d; want them untouched", p, l)
	}
}
