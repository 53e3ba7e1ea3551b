package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
)

// TestCycle: the first pass gets every URL whole, the second sends the
// validators it was given and gets 304s; a failing URL counts as an error
// in both; the server's CPU is read from /proc.
func TestCycle(t *testing.T) {
	var conditional atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gone" {
			http.NotFound(w, r)
			return
		}
		etag := `"` + r.URL.Path + `"`
		if r.Header.Get("If-None-Match") == etag && r.Header.Get("If-Modified-Since") == "Sat, 21 Nov 2026 10:00:00 GMT" {
			conditional.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		w.Header().Set("Last-Modified", "Sat, 21 Nov 2026 10:00:00 GMT")
		w.Write([]byte("<rss/>"))
	}))
	defer srv.Close()
	urls := []string{srv.URL + "/a", srv.URL + "/b", srv.URL + "/c", srv.URL + "/gone"}
	passes := cycle(srv.Client(), urls, 2, os.Getpid())
	if len(passes) != 2 {
		t.Fatalf("%d passes", len(passes))
	}
	cold, warm := passes[0], passes[1]
	if cold.name != "cold" || cold.ok != 3 || cold.notModified != 0 || cold.errors != 1 {
		t.Errorf("cold pass: %+v", cold)
	}
	if warm.name != "warm" || warm.ok != 0 || warm.notModified != 3 || warm.errors != 1 || conditional.Load() != 3 {
		t.Errorf("warm pass: %+v, %d conditional requests", warm, conditional.Load())
	}
	if cold.serverCPU < 0 || warm.serverCPU < 0 {
		t.Errorf("server CPU not read: %v %v", cold.serverCPU, warm.serverCPU)
	}
	if processCPU(0) != -1 || processCPU(-5) != -1 {
		t.Error("processCPU of no process is not -1")
	}
}
