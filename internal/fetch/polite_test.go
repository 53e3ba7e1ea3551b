package fetch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/clock"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

func dues(t *testing.T, urls ...string) string {
	t.Helper()
	var b strings.Builder
	for i, u := range urls {
		b.WriteString(dueLine(t, fmt.Sprintf("feed%d", i), u, ndjson.Validators{}) + "\n")
	}
	return b.String()
}

// TestPerHostRateSpreadsABurst sends three feeds of one host and one of
// another through a fake clock: the second host is fetched at once, and
// the first host's feeds a second apart, never two at a time.
func TestPerHostRateSpreadsABurst(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	fake := clock.NewFake(t0)
	var mu sync.Mutex
	seen := map[string][]time.Duration{} // host -> fake times of its requests
	arrived := make(chan struct{}, 4)
	handler := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[name] = append(seen[name], fake.Now().Sub(t0))
			mu.Unlock()
			arrived <- struct{}{}
			w.Write([]byte(feedBody))
		})
	}
	a := httptest.NewServer(handler("a"))
	defer a.Close()
	b := httptest.NewServer(handler("b"))
	defer b.Close()
	st, _ := storedir.Open(t.TempDir())
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Config{
			In:  strings.NewReader(dues(t, a.URL+"/1", a.URL+"/2", a.URL+"/3", b.URL+"/1")),
			Out: ndjson.NewWriter(&out), Store: st, Clock: fake,
			Client:  httpx.New(httpx.Options{AllowPrivate: true}),
			Limiter: httpx.NewLimiter(1, 1, fake),
		})
	}()
	// The clock moves only once the requests due before have reached the
	// servers: a request started at 0s but served after a move would be
	// counted at the later time.
	<-arrived
	<-arrived
	for range 2 { // a's second and third feeds wait a second each
		fake.BlockUntil(1)
		fake.Advance(time.Second)
		<-arrived
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(seen["a"]); got != "[0s 1s 2s]" {
		t.Errorf("host a requested at %s, want [0s 1s 2s]", got)
	}
	if got := fmt.Sprint(seen["b"]); got != "[0s]" {
		t.Errorf("host b requested at %s, want [0s]: it must not wait for a", got)
	}
}

// TestRedirectTargetGetsItsHostRate: feeds on three hosts that all
// redirect to one host (a feed proxy) reach it no faster than its rate,
// a second apart on the fake clock, not at once.
func TestRedirectTargetGetsItsHostRate(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	fake := clock.NewFake(t0)
	arrived := make(chan time.Duration, 3)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- fake.Now().Sub(t0)
		w.Write([]byte(feedBody))
	}))
	defer proxy.Close()
	var urls []string
	for i := range 3 {
		origin := httptest.NewServer(http.RedirectHandler(fmt.Sprintf("%s/feed/%d", proxy.URL, i), http.StatusFound))
		defer origin.Close()
		urls = append(urls, origin.URL+"/feed")
	}
	st, _ := storedir.Open(t.TempDir())
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Config{
			In: strings.NewReader(dues(t, urls...)), Out: ndjson.NewWriter(&out), Store: st, Clock: fake,
			Client:  httpx.New(httpx.Options{AllowPrivate: true}),
			Limiter: httpx.NewLimiter(1, 1, fake),
		})
	}()
	// The clock moves only while a fetch waits for it and none is in
	// flight to the proxy (one at a time there): a request is timed
	// when it arrives.
	var seen []time.Duration
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(20 * time.Second)
	for len(seen) < 3 {
		select {
		case at := <-arrived:
			seen = append(seen, at)
		case <-tick.C:
			if fake.Waiters() > 0 {
				fake.Advance(time.Second)
			}
		case <-timeout:
			t.Fatalf("the proxy got requests at %v only", seen)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(seen); got != "[0s 1s 2s]" {
		t.Errorf("the proxy got requests at %s, want [0s 1s 2s]: one a second", got)
	}
	if n := strings.Count(out.String(), `"http_status":200,`); n != 3 {
		t.Errorf("%d fetches succeeded, want 3:\n%s", n, out.String())
	}
}

// TestRefusedFeedsDoNotWaitForTheirHostsRate: a host whose address is
// refused gets no request, so its feeds do not take turns at its rate
// (here one request every 5 s, which three feeds would take 10 s to
// clear): all three are refused at once, one or two at a time. (That a
// redirect's request keeps its host's rate: httpx's
// TestUnsentOnlyWhenNothingLeft.)
func TestRefusedFeedsDoNotWaitForTheirHostsRate(t *testing.T) {
	closed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the refused host got a request: %s", r.URL)
	}))
	defer closed.Close()
	for _, perHost := range []int{1, 2} { // waiting for its rate, a host of 2 sleeps
		t.Run(fmt.Sprintf("%d a host", perHost), func(t *testing.T) {
			st, _ := storedir.Open(t.TempDir())
			var out bytes.Buffer
			start := time.Now()
			err := Run(context.Background(), Config{
				In:  strings.NewReader(dues(t, closed.URL+"/1", closed.URL+"/2", closed.URL+"/3")),
				Out: ndjson.NewWriter(&out), Store: st, Concurrency: 5,
				Client:  httpx.New(httpx.Options{}),
				Limiter: httpx.NewLimiter(perHost, 0.2, nil),
			})
			if err == nil {
				t.Error("Run returned nil; want the refused feeds counted as failed")
			}
			if took := time.Since(start); took > 4*time.Second {
				t.Errorf("the run took %s: the refused feeds waited for their host's rate", took.Round(time.Millisecond))
			}
			if n := strings.Count(out.String(), `"code":"`+httpx.CodeAddressRefused+`"`); n != 3 {
				t.Errorf("%d fetches refused, want 3:\n%s", n, out.String())
			}
		})
	}
}

// TestSlowHostDoesNotHoldUpOthers keeps one host's request hanging until
// the feeds of four other hosts have been fetched: were the slow host
// holding the others up, they would never be.
func TestSlowHostDoesNotHoldUpOthers(t *testing.T) {
	release := make(chan struct{})
	var served sync.WaitGroup
	served.Add(4)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Write([]byte(feedBody))
	}))
	defer slow.Close()
	urls := []string{slow.URL + "/1", slow.URL + "/2"}
	for range 4 {
		fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(feedBody))
			served.Done()
		}))
		defer fast.Close()
		urls = append(urls, fast.URL+"/feed")
	}
	allFast := make(chan struct{})
	go func() { served.Wait(); close(allFast) }()
	go func() {
		// The slow host answers only once the others' feeds are served: a
		// dispatcher that made them wait for it never gets there. The
		// time allowed is generous, as each fetch syncs its records: on a
		// loaded machine's disk four took over 10 s.
		select {
		case <-allFast:
		case <-time.After(60 * time.Second):
			t.Error("the other hosts' feeds were not fetched while one host hung")
		}
		close(release)
	}()
	st, _ := storedir.Open(t.TempDir())
	var out bytes.Buffer
	err := Run(context.Background(), Config{In: strings.NewReader(dues(t, urls...)), Out: ndjson.NewWriter(&out), Store: st,
		Concurrency: 2, Client: httpx.New(httpx.Options{AllowPrivate: true}), Limiter: httpx.NewLimiter(1, 0, nil)})
	if err != nil || strings.Count(out.String(), `"type":"fetch"`) != 6 {
		t.Fatalf("err %v, output:\n%s", err, out.String())
	}
}

func TestRedirectsUnchangedBodiesAndSavedBytes(t *testing.T) {
	srv := server(t)
	st, _ := storedir.Open(t.TempDir())
	sum := sha256.Sum256([]byte(feedBody))
	due := func(id, url string, last ndjson.LastFetch, v ndjson.Validators) string {
		b, _ := ndjson.Marshal(ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: testids.Feed(id), URL: url, Last: last, Validators: v})
		return string(b)
	}
	moved := srv.URL + "/redirect/301?to=/feed.xml"
	chain := srv.URL + "/redirect/301?to=/redirect/302%3Fto%3D/feed.xml"
	first := run(t, st, due("etag", srv.URL+"/feed.xml", ndjson.LastFetch{}, ndjson.Validators{})).fetches[0]
	in := due("third-move", moved, ndjson.LastFetch{MovedTo: srv.URL + "/feed.xml", MovedCount: 2}, ndjson.Validators{}) +
		due("first-move", moved, ndjson.LastFetch{MovedTo: srv.URL + "/elsewhere", MovedCount: 5}, ndjson.Validators{}) +
		due("temporary", srv.URL+"/redirect/302?to=/feed.xml", ndjson.LastFetch{MovedTo: srv.URL + "/feed.xml", MovedCount: 2}, ndjson.Validators{}) +
		due("same-body", srv.URL+"/feed.xml", ndjson.LastFetch{BodySHA256: hex.EncodeToString(sum[:])}, ndjson.Validators{}) +
		due("not-modified", srv.URL+"/feed.xml", ndjson.LastFetch{ContentLength: 4321}, ndjson.Validators{ETag: first.ResponseHeaders["Etag"]}) +
		due("not-modified-2", srv.URL+"/feed.xml", ndjson.LastFetch{ContentLength: 1000}, ndjson.Validators{ETag: first.ResponseHeaders["Etag"]}) +
		due("chain", chain, ndjson.LastFetch{MovedTo: srv.URL + "/feed.xml", MovedCount: 2}, ndjson.Validators{})
	r := run(t, st, in)
	by := map[string]ndjson.Fetch{}
	for _, f := range r.fetches {
		by[testids.Name(f.Due.FeedID)] = f
	}
	for id, want := range map[string]string{
		"third-move":   "moved " + srv.URL + "/feed.xml 3 new " + srv.URL + "/feed.xml",
		"first-move":   "moved " + srv.URL + "/feed.xml 1 new ",
		"temporary":    "moved  0 new ",
		"same-body":    "moved  0 new ",
		"not-modified": "moved  0 new ",
		"chain":        "moved  0 new ", // a 302 in the chain: not moved for good
	} {
		f := by[id]
		if got := fmt.Sprintf("moved %s %d new %s", f.MovedTo, f.MovedCount, f.NewURL); got != want {
			t.Errorf("%s: %s, want %s", id, got, want)
		}
	}
	if !by["same-body"].Unchanged || by["third-move"].Unchanged {
		t.Errorf("unchanged: same-body %v, third-move %v", by["same-body"].Unchanged, by["third-move"].Unchanged)
	}
	if nm := by["not-modified"]; !nm.NotModified || nm.BytesSaved != 4321 {
		t.Errorf("304 saved %d bytes (not modified %v), want 4321", nm.BytesSaved, nm.NotModified)
	}
	// The log's total of bytes saved is the 304s' sum.
	if !regexp.MustCompile(`msg="fetch done" .*not_modified=2 .*bytes_saved=5321 `).MatchString(r.logs) {
		t.Errorf("the fetch done line lacks not_modified=2 bytes_saved=5321:\n%s", r.logs)
	}

	// Every hop of a redirect chain is recorded: the URL asked for, and
	// the status that sent the fetch on.
	for id, want := range map[string]string{
		"third-move": fmt.Sprint([]ndjson.Redirect{{URL: moved, Status: 301}}),
		"temporary":  fmt.Sprint([]ndjson.Redirect{{URL: srv.URL + "/redirect/302?to=/feed.xml", Status: 302}}),
		"chain":      fmt.Sprint([]ndjson.Redirect{{URL: chain, Status: 301}, {URL: srv.URL + "/redirect/302?to=/feed.xml", Status: 302}}),
		"same-body":  "[]",
	} {
		f := by[id]
		if got := fmt.Sprint(f.Redirects); got != want || f.URL != srv.URL+"/feed.xml" {
			t.Errorf("%s: redirects %s to %s, want %s to %s/feed.xml", id, got, f.URL, want, srv.URL)
		}
	}
	for _, l := range r.lines {
		if strings.Contains(l, `"feed_id":"`+testids.Feed("same-body")+`"`) && !strings.Contains(l, `"redirects":[],`) {
			t.Errorf("a fetch without redirects must record an empty list:\n%s", l)
		}
	}
}

func TestCredentialsNeverRecorded(t *testing.T) {
	var gotAuth, gotKey string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotKey = r.Header.Get("Authorization"), r.Header.Get("X-Api-Key")
		w.Write([]byte(feedBody))
	}))
	defer srv.Close()
	st, _ := storedir.Open(t.TempDir())
	// A header's name does not tell whether its value is a secret (X-Auth,
	// X-Access-Key, Api_Key): every extra header's value is redacted.
	secrets := map[string]string{"X-Api-Key": "k-e-y", "X-Auth": "x-auth-v", "X-Access-Key": "x-access-v", "Api_key": "api-key-v", "X-Plain": "plain-v"}
	b, _ := ndjson.Marshal(ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: testids.Feed("f"), URL: srv.URL,
		Access:     ndjson.Access{UserAgent: "mine/1", Headers: secrets, Auth: &ndjson.Auth{Username: "ann", Password: "s3cret"}},
		Validators: ndjson.Validators{ETag: `"v1"`}})
	r := run(t, st, string(b))
	if gotAuth == "" || gotKey != "k-e-y" {
		t.Fatalf("the server got auth %q key %q", gotAuth, gotKey)
	}
	logged, _ := os.ReadFile(st.Path("fetches/2026-11-21.ndjson"))
	for _, secret := range append(slices.Collect(maps.Values(secrets)), "s3cret", gotAuth[len("Basic "):]) {
		if strings.Contains(string(logged), secret) || strings.Contains(strings.Join(r.lines, ""), secret) || strings.Contains(r.logs, secret) {
			t.Errorf("%q was recorded", secret)
		}
	}
	f := r.fetches[0]
	if f.Due.Auth == nil || f.Due.Auth.Username != "ann" || f.Due.Headers["X-Auth"] != "(redacted)" || f.RequestHeaders["X-Plain"] != "(redacted)" {
		t.Errorf("recorded due %+v, request headers %v", f.Due.Access, f.RequestHeaders)
	}
	// The standard headers the client sets itself stay readable.
	for _, name := range []string{"User-Agent", "Accept", "Accept-Encoding", "If-None-Match"} {
		if v := f.RequestHeaders[name]; v == "" || v == "(redacted)" {
			t.Errorf("request header %s recorded as %q", name, v)
		}
	}
}

// TestURLCredentialsNeverRecorded: a due URL with user:password@ in it
// authenticates, and the password reaches neither fetches/, stdout nor
// the logs (a failed fetch logs its URL), nor the feed id.
func TestURLCredentialsNeverRecorded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/feed" {
			http.Redirect(w, r, "/final", http.StatusFound)
			return
		}
		if user, pass, _ := r.BasicAuth(); user != "ann" || pass != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Write([]byte(feedBody))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	st, _ := storedir.Open(t.TempDir())
	r := run(t, st, `{"type":"due","v":1,"url":"http://ann:s3cret@`+host+`/feed"}`+"\n"+
		`{"type":"due","v":1,"feed_id":"`+testids.Feed("wrong")+`","url":"http://ann:wr0ng@`+host+`/feed"}`+"\n")
	if len(r.fetches) != 2 {
		t.Fatalf("%d fetches, err %v", len(r.fetches), r.err)
	}
	by := map[string]ndjson.Fetch{}
	for _, f := range r.fetches {
		by[testids.Name(f.Due.FeedID)] = f
	}
	ok, wrong := by[ids.FeedID(srv.URL+"/feed")], by["wrong"]
	if ok.Error != nil || ok.HTTPStatus != 200 || wrong.HTTPStatus != 401 {
		t.Fatalf("with the password: %d %+v; with a wrong one: %d; feed ids %v", ok.HTTPStatus, ok.Error, wrong.HTTPStatus, slices.Collect(maps.Keys(by)))
	}
	if ok.RequestedURL != srv.URL+"/feed" || ok.Due.URL != srv.URL+"/feed" || ok.Due.Auth == nil || ok.Due.Auth.Username != "ann" {
		t.Errorf("requested %s, due %s, auth %+v", ok.RequestedURL, ok.Due.URL, ok.Due.Auth)
	}
	if !strings.Contains(r.logs, "url="+srv.URL+"/feed") {
		t.Errorf("the failed fetch's URL was not logged:\n%s", r.logs)
	}
	logged, _ := os.ReadFile(st.Path("fetches/2026-11-21.ndjson"))
	for _, secret := range []string{"s3cret", "wr0ng", base64.StdEncoding.EncodeToString([]byte("ann:s3cret"))} {
		if strings.Contains(string(logged), secret) || strings.Contains(strings.Join(r.lines, ""), secret) || strings.Contains(r.logs, secret) {
			t.Errorf("%q was recorded", secret)
		}
	}
}

// TestLastFeedOfAHostClosesItsConnection: a host's connection stays open
// while more of its feeds are queued, and its last feed asks for it to be
// closed, so that thousands of hosts do not leave thousands of idle
// connections behind. (The first feed of a host may start before the
// others are read, and close too: it is not checked.)
func TestLastFeedOfAHostClosesItsConnection(t *testing.T) {
	var mu sync.Mutex
	closing := map[string]bool{} // path -> the request asked to close
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/1" {
			time.Sleep(100 * time.Millisecond) // the rest of the input is read meanwhile
		}
		mu.Lock()
		closing[r.URL.Path] = r.Close
		mu.Unlock()
		w.Write([]byte(feedBody))
	}))
	defer srv.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		closing["other"+r.URL.Path] = r.Close
		mu.Unlock()
		w.Write([]byte(feedBody))
	}))
	defer other.Close()
	st, _ := storedir.Open(t.TempDir())
	var out bytes.Buffer
	err := Run(context.Background(), Config{
		In:  strings.NewReader(dues(t, srv.URL+"/1", srv.URL+"/2", srv.URL+"/3", other.URL+"/1")),
		Out: ndjson.NewWriter(&out), Store: st,
		Client:  httpx.New(httpx.Options{AllowPrivate: true}),
		Limiter: httpx.NewLimiter(1, 0, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	delete(closing, "/1")
	want := map[string]bool{"/2": false, "/3": true, "other/1": true}
	if fmt.Sprint(closing) != fmt.Sprint(want) {
		t.Errorf("Connection: close asked for %v, want %v", closing, want)
	}
}
