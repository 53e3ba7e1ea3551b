package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/sub"
)

// TestHostCheck: a request that calls the server by a name it does not
// know (a rebound name) gets 421 on every route; IP addresses, localhost
// and its subdomains, --base-url's host and --allowed-host are answered.
func TestHostCheck(t *testing.T) {
	w := newWorld(t, func(c *Config) {
		c.BaseURL = "https://feeds.example.org/api"
		c.AllowedHosts = []string{"reader.example.net:8443", "Intranet.Local."}
	})
	id := w.ids["TechCrunch.xml"]
	fetchID := w.firstFetchID(id)
	paths := []string{"/feeds", "/feeds/" + id, "/raw/" + fetchID, "/", "/web/river", "/healthz", "/all.atom",
		"/reader/api/0/user-info", "/accounts/ClientLogin"}
	for _, c := range []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1", true}, {"127.0.0.1:8080", true}, {"[::1]:8080", true}, {"192.168.1.20:8080", true},
		{"localhost", true}, {"localhost:8080", true}, {"app.localhost:9", true}, {"LOCALHOST.", true},
		{"feeds.example.org", true}, {"FEEDS.example.org:443", true}, {"reader.example.net", true}, {"intranet.local", true},
		{"rebind.attacker.example", false}, {"rebind.attacker.example:8080", false}, {"localhost.attacker.example", false},
		{"feeds.example.org.attacker.example", false}, {"example.org", false}, {"127.0.0.1.nip.io", false},
	} {
		for _, p := range paths {
			r := w.get(p, "Host", c.host)
			if got := r.status != http.StatusMisdirectedRequest; got != c.ok {
				t.Errorf("Host %s, %s: %d %.120s", c.host, p, r.status, r.body)
			}
		}
	}
	r := w.get("/feeds", "Host", "rebind.attacker.example:8080")
	if p := r.problem(t, http.StatusMisdirectedRequest); !strings.Contains(p.Detail, "--allowed-host") || strings.Contains(string(r.body), "TechCrunch") {
		t.Errorf("421: %+v", p)
	}
	// Nothing but the loopback names and IP addresses without --base-url
	// and --allowed-host.
	w = newWorld(t)
	if r := w.get("/feeds", "Host", "feeds.example.org"); r.status != http.StatusMisdirectedRequest {
		t.Errorf("no --base-url, a name: %d", r.status)
	}
}

// firstFetchID is the id of a fetch of the feed id.
func (w *world) firstFetchID(id string) string {
	w.t.Helper()
	var out struct {
		Entries []struct {
			RawRef struct {
				FetchID string `json:"fetch_id"`
			} `json:"raw_ref"`
		} `json:"entries"`
	}
	w.get("/feeds/"+id+"/entries?limit=1").json(w.t, &out)
	if len(out.Entries) == 0 || out.Entries[0].RawRef.FetchID == "" {
		w.t.Fatalf("no fetch of %s", id)
	}
	return out.Entries[0].RawRef.FetchID
}

// TestKeptAnswersKeepTheirOrigin: the links of an answer kept for one
// Host are never those of another's; with --base-url, every link is
// --base-url's whatever the Host.
func TestKeptAnswersKeepTheirOrigin(t *testing.T) {
	w := newWorld(t)
	id := w.ids["TechCrunch.xml"]
	for _, path := range []string{"/feeds?limit=1", "/feeds/" + id + "/entries?limit=1", "/feeds/" + id + "/feed.atom?limit=1", "/all.json?limit=1", "/entries?limit=1"} {
		for i := 0; i < 2; i++ { // the second time from the cache
			for _, host := range []string{"a.localhost:1234", "127.0.0.1:9999", "b.localhost"} {
				r := w.get(path, "Host", host)
				if r.status != 200 {
					t.Fatalf("%s: %d %s", path, r.status, r.body)
				}
				link := r.header.Get("Link")
				if !strings.Contains(link, "http://"+host+"/") {
					t.Errorf("%s with Host %s: Link %q", path, host, link)
				}
				if strings.Contains(path, "feed.") || strings.Contains(path, "all.") {
					if !strings.Contains(string(r.body), "http://"+host+"/") {
						t.Errorf("%s with Host %s: the feed's links are another's: %.300s", path, host, r.body)
					}
				}
				for _, other := range []string{"a.localhost:1234", "127.0.0.1:9999", "b.localhost/"} {
					if !strings.HasPrefix(host+"/", other) && (strings.Contains(link, other) || strings.Contains(string(r.body), "//"+other)) {
						t.Errorf("%s with Host %s: a link of %s", path, host, other)
					}
				}
			}
		}
	}
	w = newWorld(t, func(c *Config) { c.BaseURL = "https://feeds.example.org/api/" })
	for _, host := range []string{"a.localhost", "127.0.0.1:1", "feeds.example.org"} {
		r := w.get("/all.atom?limit=1", "Host", host)
		if link := r.header.Get("Link"); !strings.HasPrefix(link, "<https://feeds.example.org/api/all.atom?limit=1>") || strings.Contains(string(r.body), "localhost") {
			t.Errorf("--base-url, Host %s: Link %q", host, link)
		}
	}
}

// TestLinkInjection: a raw query that would close a Link header's URL and
// add a link of its own goes into the self link encoded.
func TestLinkInjection(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.Hub = "https://hub.example/" })
	id := w.ids["TechCrunch.xml"]
	evil := `x=>;rel="hub",<https://attacker.example/hub>`
	for _, path := range []string{"/all.atom?", "/all.rss?limit=2&", "/feeds/" + id + "/feed.json?", "/labels/news.atom?",
		"/reader/atom/user%2F-%2Fstate%2Fcom.google%2Freading-list?"} {
		r := w.get(path + strings.NewReplacer(`"`, "%22", "<", "%3C", ">", "%3E").Replace(evil))
		if strings.HasPrefix(path, "/reader/") {
			continue // off until a user is added: TestGReaderLinks
		}
		if r.status != 200 {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
		link := r.header.Get("Link")
		if strings.Contains(link, "attacker.example/hub>") || strings.Count(link, "rel=") != strings.Count(link, "<") {
			t.Errorf("%s: Link %q", path, link)
		}
		if strings.Count(link, `rel="hub"`) != 1 || !strings.Contains(link, "<https://hub.example/>") {
			t.Errorf("%s: Link %q", path, link)
		}
		r = w.get(path + evil) // sent raw, as a hand-made client may
		if link := r.header.Get("Link"); r.status == 200 && strings.Contains(link, "attacker.example/hub>") {
			t.Errorf("%s sent raw: Link %q", path, link)
		}
	}
}

// TestClientAddr: X-Forwarded-For and -Proto are believed only from a
// trusted proxy, and only as far as the proxies it trusts.
func TestClientAddr(t *testing.T) {
	s := &Server{cfg: Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}}}
	for _, c := range []struct {
		remote, xff, proto string
		want               string
		secure             bool
	}{
		{"203.0.113.5:4000", "198.51.100.1", "https", "203.0.113.5", false},
		{"10.1.2.3:4000", "198.51.100.1", "https", "198.51.100.1", true},
		{"10.1.2.3:4000", "6.6.6.6, 198.51.100.1, 10.9.9.9", "http", "198.51.100.1", false},
		{"[::1]:4000", "2001:db8::7", "HTTPS", "2001:db8::7", true},
		{"10.1.2.3:4000", "", "", "10.1.2.3", false},
		{"10.1.2.3:4000", "not an address", "", "10.1.2.3", false},
		{"[::ffff:10.1.2.3]:4000", "198.51.100.9", "", "198.51.100.9", false},
	} {
		r, _ := http.NewRequest("GET", "http://127.0.0.1/", nil)
		r.RemoteAddr = c.remote
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if c.proto != "" {
			r.Header.Set("X-Forwarded-Proto", c.proto)
		}
		if got := s.clientAddr(r); got != c.want {
			t.Errorf("%s %q: client %s, want %s", c.remote, c.xff, got, c.want)
		}
		if got := s.secure(r); got != c.secure {
			t.Errorf("%s %q: secure %v", c.remote, c.proto, got)
		}
	}
}

// TestRawType: a payload of a type a browser would run or render as a
// page is served as a download.
func TestRawType(t *testing.T) {
	for _, c := range []struct {
		in, want   string
		attachment bool
	}{
		{"application/rss+xml; charset=utf-8", "application/rss+xml; charset=utf-8", false},
		{"application/feed+json", "application/feed+json", false},
		{"text/xml", "text/xml", false},
		{"text/html; charset=utf-8", "application/octet-stream", true},
		{"TEXT/HTML", "application/octet-stream", true},
		{"application/xhtml+xml", "application/octet-stream", true},
		{"image/svg+xml", "application/octet-stream", true},
		{"text/javascript", "application/octet-stream", true},
		{"application/javascript", "application/octet-stream", true},
		{"application/x-javascript", "application/octet-stream", true},
		{"text/ecmascript", "application/octet-stream", true},
		{"text/xsl", "application/octet-stream", true},
		{"", "application/octet-stream", false},
		{"not a type", "application/octet-stream", false},
	} {
		got, attach := rawType(c.in)
		if got != c.want || attach != c.attachment {
			t.Errorf("rawType(%q) = %q %v, want %q %v", c.in, got, attach, c.want, c.attachment)
		}
	}
}

// grLogin logs user in with pw through ClientLogin and returns the Auth.
func (w *world) grLogin(user, pw string, header ...string) reply {
	w.t.Helper()
	return w.do("POST", "/accounts/ClientLogin", "Email="+user+"&Passwd="+url.QueryEscape(pw),
		append([]string{"Content-Type", "application/x-www-form-urlencoded"}, header...)...)
}

// usersWorld is a world with the admin alice and the reader bob, and
// their Google Reader API tokens.
func usersWorld(t *testing.T, cfgs ...func(*Config)) (w *world, alice, bob string) {
	t.Helper()
	t.Cleanup(catalog.SetTestIterations(1000))
	w = newWorld(t, cfgs...)
	ctx := context.Background()
	if err := w.cat.AddUser(ctx, "alice", "alice's password", catalog.RoleAdmin, t0); err != nil {
		t.Fatal(err)
	}
	if err := w.cat.AddUser(ctx, "bob", "bob's password!", catalog.RoleReader, t0); err != nil {
		t.Fatal(err)
	}
	_, alice = w.login(t, "alice", "alice's password")
	_, bob = w.login(t, "bob", "bob's password!")
	return w, alice, bob
}

// TestReaderMarksNeedAuth: a reader's marks are read only with the
// token or that user's session; the default reader's stay open.
func TestReaderMarksNeedAuth(t *testing.T) {
	w, alice, bob := usersWorld(t)
	id := w.ids["TechCrunch.xml"]
	for _, path := range []string{"/entries?reader=alice&starred=true", "/feeds?reader=alice", "/feeds/" + id + "/entries?reader=alice&unread=true"} {
		for _, c := range []struct {
			who    string
			header []string
			status int
		}{
			{"nobody", nil, 401},
			{"the token", []string{"Authorization", "Bearer " + testToken}, 200},
			{"alice", []string{"Authorization", "GoogleLogin auth=" + alice}, 200},
			{"bob", []string{"Authorization", "GoogleLogin auth=" + bob}, 401},
			{"a wrong token", []string{"Authorization", "Bearer 0000000000000000000000"}, 401},
		} {
			if r := w.get(path, c.header...); r.status != c.status {
				t.Errorf("%s as %s: %d, want %d", path, c.who, r.status, c.status)
			}
		}
	}
	for _, path := range []string{"/entries?reader=default&starred=true", "/entries?unread=true", "/feeds?reader=default"} {
		if r := w.get(path); r.status != 200 {
			t.Errorf("%s: %d", path, r.status)
		}
	}
	// The web page: bob's session opens his marks, not alice's.
	c := w.webSignIn(url.Values{"user": {"bob"}, "password": {"bob's password!"}})
	for _, p := range []struct {
		path   string
		header []string
		status int
	}{
		{"/web/river?reader=alice", nil, 401},
		{"/web/river?reader=alice", []string{"Cookie", c}, 401},
		{"/web/river?reader=bob", []string{"Cookie", c}, 200},
		{"/web/river", []string{"Cookie", c}, 200},
		{"/web/river", nil, 200},
		{"/?reader=alice", nil, 401},
		{"/web/river?reader=alice", []string{"Authorization", "Bearer " + testToken}, 200},
	} {
		if r := w.get(p.path, p.header...); r.status != p.status {
			t.Errorf("%s %v: %d, want %d", p.path, p.header, r.status, p.status)
		}
	}
	if p := w.page("/web/river", 200, "Cookie", c); !strings.Contains(p, "reader: bob") {
		t.Errorf("bob's session reads as another reader")
	}
}

// webSignIn signs in on the web page with the form v and returns the
// session's cookie.
func (w *world) webSignIn(v url.Values) string {
	w.t.Helper()
	r := w.form("/web/signin", v)
	cookie := r.header.Get("Set-Cookie")
	if r.status != 303 || !strings.HasPrefix(cookie, sessionCookie+"=") {
		w.t.Fatalf("sign in %v: %d %v %s", v, r.status, r.header, r.body)
	}
	return strings.SplitN(cookie, ";", 2)[0]
}

// TestGReaderRoles: a reader reads and marks, and changes no
// subscription; an admin does; names and labels that are no names are
// refused to anyone.
func TestGReaderRoles(t *testing.T) {
	w, alice, bob := usersWorld(t)
	subs := func() int {
		t.Helper()
		s, err := w.cat.Subscriptions(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return len(s)
	}
	before := subs()
	id := w.ids["TechCrunch.xml"]
	for _, c := range []struct{ path, form string }{
		{"/reader/api/0/subscription/quickadd", "quickadd=https://example.org/new.xml"},
		{"/reader/api/0/subscription/edit", "ac=unsubscribe&s=feed/" + id},
		{"/reader/api/0/subscription/edit", "ac=edit&s=feed/" + id + "&t=Renamed"},
		{"/reader/api/0/subscription/edit", "ac=subscribe&s=feed/https://example.org/x.xml"},
	} {
		r := w.gr(bob, "POST", c.path, c.form)
		if p := r.problem(t, 403); !strings.Contains(p.Detail, "feed-serve user role bob admin") {
			t.Errorf("%s as a reader: %+v", c.form, p)
		}
	}
	if subs() != before {
		t.Fatal("a reader changed the subscriptions")
	}
	if r := w.gr(bob, "POST", "/reader/api/0/edit-tag", "i=1&a="+stateStarred); r.status != 200 {
		t.Errorf("a reader's mark: %d %s", r.status, r.body)
	}
	// Names with CRLF, markup or a bidi override: refused, to an admin too.
	for _, name := range []string{"a\r\nSet-Cookie: x=1", "<script>alert(1)</script>", "evil\u202eexe.rss", "bel\a"} {
		r := w.gr(alice, "POST", "/reader/api/0/subscription/edit", "ac=edit&s=feed/"+id+"&t="+url.QueryEscape(name))
		if r.status != 422 {
			t.Errorf("rename to %q: %d %s", name, r.status, r.body)
		}
		r = w.gr(alice, "POST", "/reader/api/0/subscription/edit", "ac=edit&s=feed/"+id+"&a="+url.QueryEscape("user/-/label/"+name))
		if r.status != 422 && r.status != 400 {
			t.Errorf("label %q: %d %s", name, r.status, r.body)
		}
	}
	if r := w.gr(alice, "POST", "/reader/api/0/subscription/edit", "ac=edit&s=feed/"+id+"&t=Renamed"); r.status != 200 {
		t.Errorf("an admin's rename: %d %s", r.status, r.body)
	}
	if r := w.gr(alice, "POST", "/reader/api/0/subscription/quickadd", "quickadd=https://example.org/new.xml"); r.status != 200 || subs() != before+1 {
		t.Errorf("an admin's quickadd: %d %s", r.status, r.body)
	}
}

// TestSSRFChain: a feed on a private address is refused unless its
// subscription allows it, which only the token's holder can ask for, and
// only of a server that takes it; a refused fetch shows anyone its class,
// not the address a name resolved to.
func TestSSRFChain(t *testing.T) {
	w, alice, _ := usersWorld(t)
	internal := w.feeds.URL + "/TechCrunch.xml?internal"
	r := w.gr(alice, "POST", "/reader/api/0/subscription/quickadd", "quickadd="+url.QueryEscape(internal))
	var added struct {
		StreamID string `json:"streamId"`
	}
	r.json(t, &added)
	feedID := strings.TrimPrefix(added.StreamID, "feed/")
	// The pipeline, as it runs without the global switch.
	w.cycleWith(t0.Add(time.Hour), httpx.New(httpx.Options{}))
	var out FeedOut
	w.get("/feeds/"+feedID).json(t, &out)
	if out.LastError == nil || out.LastError.Code != "address_refused" || out.LastError.Message != hiddenMessage || out.AllowPrivate {
		t.Fatalf("the quickadded internal feed: %+v", out.Listing)
	}
	w.get("/feeds/"+feedID, "Authorization", "Bearer "+testToken).json(t, &out)
	if !strings.Contains(out.LastError.Message, "127.0.0.1") {
		t.Errorf("the token's holder does not see the message: %+v", out.LastError)
	}
	for _, path := range []string{"/feeds", "/feeds?state=failing", "/"} {
		if body := string(w.get(path).body); strings.Contains(body, "127.0.0.1 (") || strings.Contains(body, "non-public address: 127") {
			t.Errorf("%s shows the address: %.300s", path, body)
		}
	}
	if r := w.get("/feeds/" + feedID + "/entries"); strings.Contains(string(r.body), "techcrunch") {
		t.Errorf("the internal feed was read: %.200s", r.body)
	}

	// allow_private through the API: refused by a server without
	// --allow-private, even to the token's holder.
	body := `{"url": "` + w.feeds.URL + `/AmazonWebServicesBlog.xml?b", "allow_private": true}`
	if r := w.write("POST", "/feeds", body); r.status != 403 {
		t.Errorf("allow_private without --allow-private: %d %s", r.status, r.body)
	}
	if r := w.write("PATCH", "/feeds/"+feedID, `{"allow_private": true}`); r.status != 403 {
		t.Errorf("PATCH allow_private without --allow-private: %d %s", r.status, r.body)
	}
	w2 := newWorld(t, func(c *Config) { c.AllowPrivate = true })
	r = w2.write("POST", "/feeds", body)
	var made FeedOut
	r.json(t, &made)
	if r.status != 201 || !made.AllowPrivate {
		t.Fatalf("allow_private with --allow-private: %d %s", r.status, r.body)
	}
	w2.cycleWith(t0.Add(time.Hour), httpx.New(httpx.Options{}))
	if r := w2.get("/feeds/" + made.FeedID + "/entries?limit=1"); !strings.Contains(string(r.body), `"entry_uid"`) {
		t.Errorf("the feed allowed private addresses was not read: %.300s", r.body)
	}
	if r := w2.do("POST", "/feeds", body, "Content-Type", "application/json"); r.status != 401 {
		t.Errorf("allow_private without the token: %d", r.status)
	}
}

// TestLoginLimits: wrong passwords from one address, or for one user,
// are answered 429 after a few, with Retry-After, without a check; a
// right password from elsewhere, for another user, still logs in.
func TestLoginLimits(t *testing.T) {
	w, _, _ := usersWorld(t, func(c *Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")}
	})
	from := func(addr string) []string { return []string{"X-Forwarded-For", addr} }
	for i := range freeLoginFailures {
		if r := w.grLogin("alice", fmt.Sprint("wrong ", i), from("198.51.100.7")...); r.status != 403 {
			t.Fatalf("wrong password %d: %d %s", i, r.status, r.body)
		}
	}
	r := w.grLogin("bob", "bob's password!", from("198.51.100.7")...)
	if r.status != 429 || r.header.Get("Retry-After") != "1" {
		t.Errorf("the address past its failures: %d %v", r.status, r.header)
	}
	if r := w.grLogin("alice", "alice's password", from("203.0.113.9")...); r.status != 429 {
		t.Errorf("alice past her failures, from elsewhere: %d", r.status)
	}
	if r := w.grLogin("bob", "bob's password!", from("203.0.113.9")...); r.status != 200 {
		t.Errorf("bob from another address: %d %s", r.status, r.body)
	}
	// The web page's sign-in counts the same way.
	r = w.form("/web/signin", url.Values{"user": {"alice"}, "password": {"alice's password"}}, from("203.0.113.10")...)
	if r.status != 429 || !strings.Contains(string(r.body), "Too many wrong passwords") {
		t.Errorf("web sign-in of alice past her failures: %d", r.status)
	}
}

// TestLoginQueue: two checks at once, a line of maxLoginQueue behind
// them, errBusy beyond; a right password clears its counts.
func TestLoginQueue(t *testing.T) {
	l := newLoginLimiter()
	r, _ := http.NewRequest("POST", "/", nil)
	for range loginSlots {
		if err := l.enter(r); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range maxLoginQueue {
		wg.Add(1)
		go func() { defer wg.Done(); l.enter(r.WithContext(ctx)) }()
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		n := l.waiting
		l.mu.Unlock()
		if n == maxLoginQueue {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d in line", n)
		}
	}
	if err := l.enter(r); !errors.Is(err, errBusy) {
		t.Errorf("past the line: %v", err)
	}
	cancel()
	wg.Wait()
	now := t0
	for range freeLoginFailures + 1 {
		l.record(now, false, "user x")
	}
	if d := l.wait(now, "user x"); d != 2*time.Second {
		t.Errorf("after %d failures: wait %v", freeLoginFailures+1, d)
	}
	l.record(now, true, "user x")
	if d := l.wait(now, "user x"); d != 0 {
		t.Errorf("after a success: wait %v", d)
	}
	for range 40 {
		l.record(now, false, "user y")
	}
	if d := l.wait(now, "user y"); d != maxLoginWait {
		t.Errorf("the longest wait: %v", d)
	}
}

// TestWebSessions: each sign-in is a session of its own, ended by its
// sign-out alone, and all of the token's by a new token; a cookie is
// Secure behind https.
func TestWebSessions(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "serve.token")
	token, _, err := LoadToken(file)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, func(c *Config) {
		c.Token, c.TokenFile = token, file
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	one, two := w.webSignIn(url.Values{"token": {token}}), w.webSignIn(url.Values{"token": {token}})
	if one == two {
		t.Fatal("two browsers got one session")
	}
	signedIn := func(c string) bool { return strings.Contains(w.page("/", 200, "Cookie", c), "Sign out") }
	if !signedIn(one) || !signedIn(two) {
		t.Fatal("not signed in")
	}
	w.form("/web/signout", nil, "Cookie", one)
	if signedIn(one) || !signedIn(two) {
		t.Errorf("sign out ended another browser's session, or not its own")
	}
	// The sign-in page names no path of the server's.
	if p := w.page("/web/signin", 200); strings.Contains(p, dir) || strings.Contains(p, w.st.Root) {
		t.Errorf("the sign-in page shows a path of the server's")
	}
	// Secure when the client came over https.
	for _, c := range []struct {
		header []string
		secure bool
	}{
		{nil, false},
		{[]string{"X-Forwarded-Proto", "https"}, true},
	} {
		r := w.form("/web/signin", url.Values{"token": {token}}, c.header...)
		if got := strings.Contains(r.header.Get("Set-Cookie"), "; Secure"); got != c.secure {
			t.Errorf("%v: cookie %q", c.header, r.header.Get("Set-Cookie"))
		}
	}
	// A new token: the old one and every session it opened end.
	fresh, err := RotateToken(file)
	if err != nil || fresh == token {
		t.Fatal(err)
	}
	if err := w.cat.EndTokenSessions(context.Background()); err != nil {
		t.Fatal(err)
	}
	if signedIn(two) {
		t.Errorf("a session outlived the token rotated")
	}
	deadline := time.Now().Add(3 * time.Second)
	refetch := "/feeds/" + w.ids["youtube_atom.xml"] + "/refetch"
	for w.do("POST", refetch, "", "Authorization", "Bearer "+token).status != 401 {
		if time.Now().After(deadline) {
			t.Fatal("the old token still writes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := w.do("POST", refetch, "", "Authorization", "Bearer "+fresh); r.status/100 != 2 {
		t.Errorf("the new token: %d %s", r.status, r.body)
	}
}

// TestMetaFeedsSanitised: a meta-feed republishes a publisher's HTML
// through the page's policy and no link but http(s).
func TestMetaFeedsSanitised(t *testing.T) {
	w := newWorld(t)
	os.WriteFile(filepath.Join(w.www, "evil.rss"), []byte(`<?xml version="1.0"?><rss version="2.0"><channel><title>Evil</title>
<item><title>x</title><guid>1</guid><link>javascript:alert(1)</link><description><![CDATA[<p onclick="alert(2)">hi<script>alert(3)</script><a href="javascript:alert(4)">l</a><img src="data:text/html,x"></p>]]></description>
<enclosure url="data:text/html;base64,PHNjcmlwdD4=" type="text/html" length="1"/></item></channel></rss>`), 0o644)
	s, _, err := sub.Add(sub.Config{Store: w.st, Catalog: w.cat, Out: io.Discard}, sub.Spec{URL: w.feeds.URL + "/evil.rss"})
	if err != nil {
		t.Fatal(err)
	}
	w.cycle(t0.Add(time.Hour))
	for _, format := range []string{"atom", "rss", "json"} {
		body := string(w.get("/feeds/" + s.FeedID + "/feed." + format).body)
		if !strings.Contains(body, "hi") {
			t.Fatalf("%s: no entry: %s", format, body)
		}
		for _, bad := range []string{"javascript:", "alert(", "onclick", "data:text/html", "<script", "&lt;script"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s republishes %q: %s", format, bad, body)
			}
		}
	}
}

// TestWebSoleUser: signed in with the token, the page reads as the one
// user of the Google Reader API when there is exactly one; anyone else
// sees the default reader's marks.
func TestWebSoleUser(t *testing.T) {
	t.Cleanup(catalog.SetTestIterations(1000))
	w := newWorld(t)
	if err := w.cat.AddUser(context.Background(), "alice", "alice's password", catalog.RoleReader, t0); err != nil {
		t.Fatal(err)
	}
	c := w.webSignIn(url.Values{"token": {testToken}})
	if p := w.page("/web/river", 200, "Cookie", c); !strings.Contains(p, "reader: alice") {
		t.Errorf("the token's holder does not read as the sole user")
	}
	if p := w.page("/web/river", 200); strings.Contains(p, "reader: alice") {
		t.Errorf("anyone reads as the sole user")
	}
	if err := w.cat.AddUser(context.Background(), "bob", "bob's password!", catalog.RoleReader, t0); err != nil {
		t.Fatal(err)
	}
	if p := w.page("/web/river", 200, "Cookie", c); strings.Contains(p, "reader: alice") || strings.Contains(p, "reader: bob") {
		t.Errorf("with two users, the token's holder reads as one")
	}
}
