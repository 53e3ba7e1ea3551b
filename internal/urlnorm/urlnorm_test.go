package urlnorm

import (
	"errors"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: "https://example.org/feed.xml", want: "https://example.org/feed.xml"},
		{in: "  HTTP://Example.ORG:80/a/B?x=1&y=2#frag ", want: "http://example.org/a/B?x=1&y=2"},
		{in: "https://example.org:443", want: "https://example.org/"},
		{in: "https://example.org:8443/x", want: "https://example.org:8443/x"},
		{in: "http://example.org.:80/", want: "http://example.org/"},
		{in: "http://[::1]:80/feed", want: "http://[::1]/feed"},
		{in: "http://127.0.0.1:8080/feed", want: "http://127.0.0.1:8080/feed"},
		{in: "ftp://example.org/feed", err: "only http and https"},
		{in: "file:///etc/passwd", err: "only http and https"},
		{in: "javascript:alert(1)", err: "only http and https"},
		{in: "example.org/feed", err: "has no scheme"},
		{in: "http:///nohost", err: "has no host"},
		{in: "http://exa mple.org/", err: "is not a URL"},
	} {
		got, err := Normalize(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Normalize(%q) error = %v, want one containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := Normalize("gopher://x"); !errors.Is(err, ErrScheme) {
		t.Errorf("want ErrScheme, got %v", err)
	}
}

func TestSplitUserinfo(t *testing.T) {
	for _, tc := range []struct{ in, want, user, pass string }{
		{in: "http://ann:s3cret@example.org/feed?a=1", want: "http://example.org/feed?a=1", user: "ann", pass: "s3cret"},
		{in: "https://tok@example.org:8443/x", want: "https://example.org:8443/x", user: "tok"},
		{in: "http://a%40b:p%3Aw@example.org/", want: "http://example.org/", user: "a@b", pass: "p:w"},
		{in: "http://example.org/user@home", want: "http://example.org/user@home"},
		{in: "http://@example.org/", want: "http://example.org/"},
		{in: "not a url %zz", want: "not a url %zz"},
	} {
		got, user := SplitUserinfo(tc.in)
		var u, p string
		if user != nil {
			u = user.Username()
			p, _ = user.Password()
		}
		if got != tc.want || u != tc.user || p != tc.pass {
			t.Errorf("SplitUserinfo(%q) = %q, %q:%q; want %q, %q:%q", tc.in, got, u, p, tc.want, tc.user, tc.pass)
		}
	}
}

func TestKeyIgnoresSchemeFlip(t *testing.T) {
	for _, pair := range [][2]string{
		{"http://example.org/post/1", "https://EXAMPLE.org:443/post/1"},
		{"http://example.org/page#item-2", "https://example.org/page#item-2"},
		{"tag:example.org,2026:1", " tag:example.org,2026:1 "},
	} {
		if Key(pair[0]) != Key(pair[1]) {
			t.Errorf("Key(%q) = %q != Key(%q) = %q", pair[0], Key(pair[0]), pair[1], Key(pair[1]))
		}
	}
	for _, pair := range [][2]string{
		{"https://example.org/a", "https://example.org/b"},
		{"https://example.org/page#item-1", "https://example.org/page#item-2"},
	} {
		if Key(pair[0]) == Key(pair[1]) {
			t.Errorf("%q and %q share the key %q", pair[0], pair[1], Key(pair[0]))
		}
	}
}
