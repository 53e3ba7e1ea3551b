package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/serve"
	"github.com/feedpipe/feedpipe/internal/testserver"
)

// TestNewsboat proves the Google Reader API with a client nobody here
// wrote: newsboat (Debian's package), its urls-source "feedhq" pointed at
// the real feed-serve over a store a real pipeline filled. newsboat -x
// reload print-unread lists the unread count the catalog has, feed by
// feed (newsboat's own cache read back), and the REST API's
// GET /feeds?reader= agrees; then, under tmux, an article opened in
// newsboat is read, and newsboat tells the server so (edit-tag): the
// catalog, the REST API (and feed-read, when built) see it read, and a
// new reload counts one unread less.
func TestNewsboat(t *testing.T) {
	sourcesRead(t)
	if _, err := exec.LookPath("newsboat"); err != nil {
		t.Skip("newsboat is not installed (Debian package newsboat; scripts/test installs it): the Google Reader API is not tried with a real client")
	}
	ctx := context.Background()
	dir := t.TempDir()
	www, store, home := filepath.Join(dir, "www"), filepath.Join(dir, "store"), filepath.Join(dir, "home")
	os.MkdirAll(www, 0o755)
	os.MkdirAll(home, 0o700)
	for _, f := range []string{"TechCrunch.xml", "youtube_atom.xml", "AmazonWebServicesBlog.xml"} {
		b, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "feeds", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(www, f), b, 0o644)
	}
	srv := httptest.NewServer(testserver.New(www, nil))
	t.Cleanup(srv.Close)
	env := append(os.Environ(), "FEEDPIPE_STORE="+store, "FEEDPIPE_ALLOW_PRIVATE=1", "FEEDPIPE_HOST_RPS=0", "FEEDPIPE_LOG_LEVEL=warn")
	run := func(stdin string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env, cmd.Stdin = env, strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("", "feed-sub", "add", srv.URL+"/TechCrunch.xml", "--label", "news")
	run("", "feed-sub", "add", srv.URL+"/AmazonWebServicesBlog.xml", "--label", "news", "--name", "AWS")
	run("", "feed-sub", "add", srv.URL+"/youtube_atom.xml", "--label", "video")
	run("", "bash", "-c", "set -o pipefail; feed-due | feed-fetch | feed-parse | feed-scrape | feed-dedup | feed-store >/dev/null")
	run("correct horse\n", "feed-serve", "user", "add", "alice")

	base, fsLog := startServe(t, env)
	// alice's marks are hers: the REST API shows them to the token.
	token, err := os.ReadFile(filepath.Join(store, "serve.token"))
	if err != nil {
		t.Fatal(err)
	}
	get := func(url string) (*http.Response, error) {
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		return http.DefaultClient.Do(req)
	}

	// The three views: the catalog's, the REST API's, newsboat's.
	cat := mustCatalog(t, store)
	defer cat.Close()
	catalogView := func() map[string]int {
		t.Helper()
		counts, err := cat.UnreadCounts(ctx, "alice", time.Now().Add(-serve.DefaultUnreadWindow))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for id, u := range counts {
			out[id] = u.Count
		}
		return out
	}
	restView := func() map[string]int {
		t.Helper()
		resp, err := get(base + "/feeds?reader=alice")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var page struct {
			Feeds []struct {
				FeedID string `json:"feed_id"`
				Unread *int   `json:"unread"`
			} `json:"feeds"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, f := range page.Feeds {
			if f.Unread == nil {
				t.Fatalf("GET /feeds?reader=alice: no unread count for %s", f.FeedID)
			}
			if *f.Unread > 0 {
				out[f.FeedID] = *f.Unread
			}
		}
		return out
	}
	nbHome := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "TERM=xterm", "LANG=C.UTF-8"}
	conf, cache, urls, pw := filepath.Join(home, "config"), filepath.Join(home, "cache.db"), filepath.Join(home, "urls"), filepath.Join(home, "password")
	os.WriteFile(pw, []byte("correct horse"), 0o600)
	os.WriteFile(urls, nil, 0o600)
	os.WriteFile(conf, []byte(fmt.Sprintf(`urls-source "feedhq"
feedhq-url "%s/"
feedhq-login "alice"
feedhq-passwordfile "%s"
feedhq-show-special-feeds no
feedhq-min-items 1000
`, base, pw)), 0o600)
	nbArgs := []string{"-C", conf, "-c", cache, "-u", urls}
	newsboatUnread := func() int {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(c, "newsboat", append(nbArgs, "-x", "reload", "print-unread")...)
		cmd.Env = append(os.Environ(), nbHome...)
		out, err := cmd.CombinedOutput()
		m := regexp.MustCompile(`(?m)^(\d+) unread articles`).FindStringSubmatch(string(out))
		if err != nil || m == nil {
			t.Fatalf("newsboat -x reload print-unread: %v\n%s\nfeed-serve: %s", err, out, fsLog.String())
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	// newsboatView is newsboat's unread items by feed, from its cache
	// (SQLite): each feed's URL names the stream, feed/ID.
	newsboatView := func() (map[string]int, []string) {
		t.Helper()
		db, err := sql.Open("sqlite", "file:"+cache+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rows, err := db.Query(`SELECT feedurl, guid, unread FROM rss_item WHERE deleted = 0`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		byFeed := map[string]int{}
		var read []string
		feedOf := regexp.MustCompile(`/reader/atom/feed%2F([0-9a-f-]{36})\?`)
		for rows.Next() {
			var feedURL, guid string
			var unread bool
			if err := rows.Scan(&feedURL, &guid, &unread); err != nil {
				t.Fatal(err)
			}
			m := feedOf.FindStringSubmatch(feedURL)
			if m == nil {
				t.Fatalf("newsboat read a feed at %s", feedURL)
			}
			if unread {
				byFeed[m[1]]++
			} else {
				read = append(read, guid)
			}
		}
		return byFeed, read
	}
	sum := func(m map[string]int) (n int) {
		for _, v := range m {
			n += v
		}
		return n
	}
	same := func(what string, got, want map[string]int) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: unread by feed %v, the catalog %v", what, got, want)
		}
	}

	total := newsboatUnread()
	want := catalogView()
	if len(want) != 3 || total != sum(want) || total == 0 {
		t.Fatalf("newsboat counts %d unread, the catalog %d (%v)", total, sum(want), want)
	}
	nb, read := newsboatView()
	same("newsboat", nb, want)
	same("GET /feeds?reader=alice", restView(), want)
	if len(read) != 0 {
		t.Fatalf("newsboat has read items already: %v", read)
	}
	t.Logf("newsboat, the catalog and the REST API: %d unread %v", total, want)

	// Read an article in newsboat, under tmux: open the first feed, then
	// its first article, then go back, which is when newsboat tells the
	// server (edit-tag).
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (scripts/test installs it): no article is read in newsboat")
	}
	sock := filepath.Join(dir, "tmux.sock")
	tmux := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("tmux", append([]string{"-S", sock}, args...)...)
		cmd.Env = append(os.Environ(), nbHome...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-S", sock, "kill-server").Run() })
	tmux(append([]string{"new-session", "-d", "-s", "nb", "-x", "160", "-y", "40", "env"}, append(nbHome, append([]string{"newsboat"}, nbArgs...)...)...)...)
	screen := func(want string) string {
		t.Helper()
		var s string
		for range 200 {
			if s = tmux("capture-pane", "-p", "-t", "nb"); strings.Contains(s, want) {
				return s
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("newsboat never showed %q:\n%s", want, s)
		return ""
	}
	screen("Your feeds")
	tmux("send-keys", "-t", "nb", "Enter")
	screen("Articles in feed")
	tmux("send-keys", "-t", "nb", "Enter")
	s := screen("Title: ")
	title := strings.TrimSpace(regexp.MustCompile(`(?m)^Title: (.*)$`).FindStringSubmatch(s)[1])
	tmux("send-keys", "-t", "nb", "q")
	deadline := time.Now().Add(20 * time.Second)
	for sum(catalogView()) != total-1 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	tmux("send-keys", "-t", "nb", "q")
	time.Sleep(300 * time.Millisecond)
	tmux("send-keys", "-t", "nb", "q")
	for range 100 {
		if exec.Command("tmux", "-S", sock, "has-session", "-t", "nb").Run() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	after := catalogView()
	if sum(after) != total-1 {
		t.Fatalf("newsboat read %q: the catalog has %d unread, want %d\nfeed-serve: %s", title, sum(after), total-1, fsLog.String())
	}
	same("GET /feeds?reader=alice, after", restView(), after)
	_, read = newsboatView()
	if len(read) != 1 || !strings.HasPrefix(read[0], "tag:google.com,2005:reader/item/") {
		t.Fatalf("newsboat's read items %v", read)
	}
	uid := strings.TrimPrefix(read[0], "tag:google.com,2005:reader/item/")
	// The REST API lists that entry, and only it, as alice's read one.
	resp, err := get(base + "/entries?reader=alice&limit=1000")
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Entries []struct {
			UID   string `json:"entry_uid"`
			Title string `json:"title"`
			Read  bool   `json:"read"`
		} `json:"entries"`
	}
	json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	var readREST []string
	for _, e := range page.Entries {
		if e.Read {
			readREST = append(readREST, e.UID)
			if !strings.HasPrefix(title, strings.TrimSpace(e.Title)[:min(20, len(strings.TrimSpace(e.Title)))]) {
				t.Logf("newsboat showed %q, the entry read is %q", title, e.Title)
			}
		}
	}
	if len(readREST) != 1 || readREST[0] != uid {
		t.Errorf("the REST API's read entries %v, newsboat read %s", readREST, uid)
	}
	// feed-read, when it is built, says the same.
	if _, err := exec.LookPath("feed-read"); err == nil {
		cmd := exec.Command("feed-read", "--reader", "alice", "--unread", "--json", "--limit", "1000")
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Logf("feed-read --reader alice --unread --json: %v (not compared)", err)
		} else if n := strings.Count(string(out), "\n"); n != total-1 || strings.Contains(string(out), uid) {
			t.Errorf("feed-read lists %d unread (with %s: %v), want %d without it", n, uid, strings.Contains(string(out), uid), total-1)
		}
	}
	// And newsboat, reloading, counts the same.
	if n := newsboatUnread(); n != total-1 {
		t.Errorf("newsboat counts %d unread after reading one, want %d", n, total-1)
	}
	nb, _ = newsboatView()
	same("newsboat, after", nb, after)
}
