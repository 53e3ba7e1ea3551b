package main

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The client reads answers of every framing net/http sends, and the
// connection carries the next request unless the answer closed it.
func TestRawClient(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "gzip" {
			t.Errorf("Accept-Encoding %q", r.Header.Get("Accept-Encoding"))
		}
		switch r.URL.Path {
		case "/small":
			w.Write([]byte("hello"))
		case "/chunked":
			for range 3 {
				w.Write([]byte(strings.Repeat("x", 5000)))
				w.(http.Flusher).Flush()
			}
		case "/304":
			w.WriteHeader(http.StatusNotModified)
		case "/close":
			w.Header().Set("Connection", "close")
			w.Write([]byte("bye"))
		default:
			http.NotFound(w, r)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	c := &rawClient{addr: addr, host: addr, timeout: 5 * time.Second}
	for _, tc := range []struct {
		path  string
		want  int
		conns int // opened so far
	}{
		{"/small", 200, 1}, {"/chunked", 200, 1}, {"/304", 304, 1}, {"/nothing", 404, 1}, {"/close", 200, 1}, {"/small?again", 200, 2},
	} {
		status, err := c.get(tc.path)
		if err != nil || status != tc.want {
			t.Errorf("GET %s: %d %v, want %d", tc.path, status, err, tc.want)
		}
		if int(conns.Load()) != tc.conns {
			t.Errorf("GET %s: %d connections opened, want %d", tc.path, conns.Load(), tc.conns)
		}
	}
}

// A malformed answer is an error, not a hang or a panic.
func TestReadResponseRefuses(t *testing.T) {
	for _, in := range []string{
		"", "HTTP/1.1 200 OK\r\n", "SMTP 220 hi\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
	} {
		if status, _, err := readResponse(bufio.NewReader(strings.NewReader(in))); err == nil {
			t.Errorf("%q: status %d, no error", in, status)
		}
	}
}
