package httpx

import (
	"context"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/feedpipe/feedpipe/internal/testserver"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// countingServer is a feed server that counts the requests it gets.
func countingServer(t *testing.T, h http.HandlerFunc) (port string, requests *atomic.Int32) {
	t.Helper()
	requests = new(atomic.Int32)
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		h(w, r)
	}))
	return srv.URL[strings.LastIndex(srv.URL, ":"):], requests
}

// TestNameResolvingToLoopbackIsRefused: an ordinary name that resolves to
// 127.0.0.1 is refused once resolved, inside the dialer, naming the
// address; no list of names is involved. The same client allowed private
// addresses reaches the server, so the refusal is the address check's.
func TestNameResolvingToLoopbackIsRefused(t *testing.T) {
	port, requests := countingServer(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(rss)) })
	resolver := testserver.DNS(t, map[string]netip.Addr{"feeds.example.test": netip.MustParseAddr("127.0.0.1")})
	u := "http://feeds.example.test" + port + "/feed"

	r := New(Options{Resolver: resolver}).Get(context.Background(), Request{URL: u})
	if r.Err == nil || r.Err.Code != CodeAddressRefused || !strings.Contains(r.Err.Message, "127.0.0.1") {
		t.Fatalf("err %+v, want address_refused naming 127.0.0.1", r.Err)
	}
	// Blocked, by this machine: not permanent (the feed is not gone) nor
	// transient (trying again changes nothing until --allow-private).
	if r.Err.Class != ndjson.ClassBlocked {
		t.Errorf("class %s, want blocked", r.Err.Class)
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("the server got %d requests", n)
	}
	if r := New(Options{Resolver: resolver, AllowPrivate: true}).Get(context.Background(), Request{URL: u}); r.Err != nil || requests.Load() != 1 {
		t.Fatalf("with private addresses allowed: err %+v, %d requests", r.Err, requests.Load())
	}
}

// TestRedirectToAPrivateAddressIsRefused: a public host that redirects to
// a name resolving to loopback is refused at the redirect's connection.
// (Both servers are on 127.0.0.1: the test tells the client that the
// first one's port stands for a public address.)
func TestRedirectToAPrivateAddressIsRefused(t *testing.T) {
	privatePort, privateRequests := countingServer(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(rss)) })
	publicPort, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://internal.example.test"+privatePort+"/admin", http.StatusFound)
	})
	resolver := testserver.DNS(t, map[string]netip.Addr{
		"public.example.test":   netip.MustParseAddr("127.0.0.1"),
		"internal.example.test": netip.MustParseAddr("127.0.0.1"),
	})
	c := New(Options{Resolver: resolver})
	c.public = func(a netip.AddrPort) bool {
		return ":"+strconv.Itoa(int(a.Port())) == publicPort || publicAddr(a.Addr())
	}

	r := c.Get(context.Background(), Request{URL: "http://public.example.test" + publicPort + "/feed"})
	if r.Err == nil || r.Err.Code != CodeAddressRefused || !strings.Contains(r.Err.Message, "127.0.0.1") {
		t.Fatalf("err %+v, want address_refused naming 127.0.0.1", r.Err)
	}
	if len(r.Redirects) != 1 || r.Redirects[0].Status != http.StatusFound {
		t.Errorf("redirects %+v: the public host was not reached first", r.Redirects)
	}
	if n := privateRequests.Load(); n != 0 {
		t.Fatalf("the private server got %d requests", n)
	}
}
