package discover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/httpx"
)

const rss = `<?xml version="1.0"?><rss version="2.0"><channel><title>%s</title><item><title>i</title></item></channel></rss>`

// serve runs a site with the given files and returns its URL and a function
// that lists the paths requested so far.
func serve(t *testing.T, files map[string]string) (string, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var hits []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.URL.Path)
		mu.Unlock()
		if to, ok := files["redirect "+r.URL.Path]; ok {
			http.Redirect(w, r, to, http.StatusMovedPermanently)
			return
		}
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), hits...)
	}
}

func cfg() Config {
	return Config{Client: httpx.New(httpx.Options{AllowPrivate: true, Timeout: 5 * time.Second})}
}

func describe(feeds []Feed) string {
	var parts []string
	for _, f := range feeds {
		parts = append(parts, fmt.Sprintf("%s %s %q %s", f.URL, f.Format, f.Title, f.Found))
	}
	return strings.Join(parts, "; ")
}

func TestDiscover(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files map[string]string
		page  string
		want  string // with S for the server's URL
		err   error
	}{
		{
			name: "announced, in the page's order, broken ones left out",
			files: map[string]string{
				"/": `<html><head>
					<link rel="alternate" type="application/atom+xml" href="/atom">
					<link rel="alternate" type="application/rss+xml" href="/gone">
					<link rel="alternate" type="application/rss+xml" href="/comments">
					<link rel="alternate" type="application/rss+xml" href="/not-a-feed"></head></html>`,
				"/atom":       `<feed xmlns="http://www.w3.org/2005/Atom"><title>Atom</title></feed>`,
				"/comments":   fmt.Sprintf(rss, "Comments"),
				"/not-a-feed": `<html>no</html>`,
			},
			page: "/",
			want: `S/atom atom "Atom" link; S/comments rss "Comments" link`,
		},
		{
			name:  "the URL is a feed",
			files: map[string]string{"/feed.json": `{"version":"https://jsonfeed.org/version/1.1","title":"J","items":[]}`},
			page:  "/feed.json",
			want:  `S/feed.json json "J" url`,
		},
		{
			name: "common paths, one feed at two of them counted once",
			files: map[string]string{
				"/blog/":     `<html><head><title>No announcement</title></head></html>`,
				"/feed":      fmt.Sprintf(rss, "Main"),
				"/feed/":     fmt.Sprintf(rss, "Main"),
				"/index.xml": fmt.Sprintf(rss, "Other"),
			},
			page: "/blog/",
			want: `S/feed rss "Main" path; S/index.xml rss "Other" path`,
		},
		{
			name: "a permanent redirect gives the feed's new URL",
			files: map[string]string{
				"/":                 `<link rel="alternate" type="application/rss+xml" href="/old.xml">`,
				"redirect /old.xml": "/new.xml",
				"/new.xml":          fmt.Sprintf(rss, "Moved"),
			},
			page: "/",
			want: `S/new.xml rss "Moved" link`,
		},
		{
			name:  "a page that is missing: the common paths still",
			files: map[string]string{"/rss.xml": fmt.Sprintf(rss, "R")},
			page:  "/missing",
			want:  `S/rss.xml rss "R" path`,
		},
		{
			name:  "nothing",
			files: map[string]string{"/": `<html></html>`},
			page:  "/",
			err:   ErrNone,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base, _ := serve(t, tt.files)
			feeds, err := Discover(context.Background(), cfg(), base+tt.page)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := describe(feeds), strings.ReplaceAll(tt.want, "S/", base+"/"); got != want {
				t.Errorf("found\n %s\nwant\n %s", got, want)
			}
		})
	}
}

func TestDiscoverRobots(t *testing.T) {
	base, hits := serve(t, map[string]string{
		"/robots.txt": "User-agent: *\nDisallow: /private\n",
		"/private":    `<link rel="alternate" type="application/rss+xml" href="/secret.xml">`,
		"/secret.xml": fmt.Sprintf(rss, "Secret"),
		"/atom.xml":   fmt.Sprintf(rss, "Public"),
	})
	feeds, err := Discover(context.Background(), cfg(), base+"/private")
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(feeds); got != base+`/atom.xml rss "Public" path` {
		t.Errorf("found %s", got)
	}
	for _, p := range hits() {
		if p == "/private" || p == "/secret.xml" {
			t.Errorf("%s was fetched", p)
		}
	}
}

func TestDiscoverErrors(t *testing.T) {
	if _, err := Discover(context.Background(), cfg(), "ftp://example.org/"); err == nil || !strings.Contains(err.Error(), "only http and https") {
		t.Errorf("ftp: %v", err)
	}
	// A loopback address, refused: said of the URL given, with nothing
	// asked of it (robots.txt, the common paths).
	refusedURL, hits := serve(t, map[string]string{"/feed": fmt.Sprintf(rss, "F")})
	var log strings.Builder
	_, err := Discover(context.Background(), Config{Client: httpx.New(httpx.Options{}), Log: slog.New(slog.NewTextHandler(&log, nil))}, refusedURL+"/blog/")
	if !errors.Is(err, httpx.ErrAddressRefused) || !strings.HasPrefix(err.Error(), "discover: "+refusedURL+"/blog/: refusing to connect to a non-public address: 127.0.0.1") ||
		len(hits()) > 0 || log.Len() > 0 {
		t.Errorf("refused: %v; requests %v; log %s", err, hits(), log.String())
	}
	// Nothing listens there: a network error, not "no feed found".
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	if _, err := Discover(context.Background(), cfg(), url+"/"); err == nil || errors.Is(err, ErrNone) {
		t.Errorf("closed server: %v", err)
	}
}
