package httpx

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/feedpipe/feedpipe/internal/testserver"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// TestTransportErrorClassification: each way a fetch fails before an HTTP
// status gets its class and code, against real servers and sockets (a
// connection reset: TestConnectionReset).
func TestTransportErrorClassification(t *testing.T) {
	for _, tc := range []struct {
		name        string
		url         func(t *testing.T) string
		class, code string
	}{
		{"a certificate no trusted authority signed", func(t *testing.T) string {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(rss)) }))
			srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshakes
			srv.StartTLS()
			t.Cleanup(srv.Close)
			return srv.URL + "/feed" // the client trusts the system's roots only
		}, ndjson.ClassPermanent, "tls_certificate"},
		{"a name that does not resolve", func(t *testing.T) string {
			return "http://feeds.feedpipe.invalid/feed" // .invalid never resolves (RFC 6761)
		}, ndjson.ClassTransient, "dns"},
		{"a closed port", func(t *testing.T) string {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			return "http://" + addr + "/feed"
		}, ndjson.ClassTransient, "connection_refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A DNS server of the test's own answers: no lookup leaves the
			// machine, which may have no DNS at all.
			c := New(Options{AllowPrivate: true, Resolver: testserver.DNS(t, nil)})
			r := c.Get(context.Background(), Request{URL: tc.url(t)})
			if r.Err == nil || r.Err.Class != tc.class || r.Err.Code != tc.code || r.Err.Message == "" {
				t.Fatalf("err %+v, want class %s code %s", r.Err, tc.class, tc.code)
			}
		})
	}
}
