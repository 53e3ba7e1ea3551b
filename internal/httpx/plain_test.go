package httpx

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPlain: the plain client keeps the feed client's address rules (a
// loopback hub is refused unless allowed) and follows no redirect.
func TestPlain(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}))
	defer srv.Close()
	if _, err := New(Options{}).Plain().Post(srv.URL, "text/plain", strings.NewReader("x")); err == nil || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("a loopback hub asked: %v", err)
	}
	resp, err := New(Options{AllowPrivate: true}).Plain().Post(srv.URL, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("status %d: the redirect was followed", resp.StatusCode)
	}
}
