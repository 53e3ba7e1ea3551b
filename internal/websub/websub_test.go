package websub

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestVerify(t *testing.T) {
	body, secret := []byte("<feed/>"), []byte("s3cret")
	for _, m := range []string{"sha1", "sha256", "sha384", "sha512"} {
		if err := Verify(Sign(m, body, secret), body, secret); err != nil {
			t.Errorf("%s: %v", m, err)
		}
		if err := Verify(Sign(m, body, []byte("other")), body, secret); !errors.Is(err, ErrSignature) {
			t.Errorf("%s with another secret: %v", m, err)
		}
		if err := Verify(Sign(m, []byte("<feed>x</feed>"), secret), body, secret); !errors.Is(err, ErrSignature) {
			t.Errorf("%s of another body: %v", m, err)
		}
	}
	for _, bad := range []string{"", "sha256", "md5=00", "sha256=zz", "sha256=", "=abcd"} {
		if err := Verify(bad, body, secret); !errors.Is(err, ErrSignature) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestLinks(t *testing.T) {
	base, _ := url.Parse("https://example.org/feeds/a.xml")
	hubs, self := Links([]string{
		`<https://hub.example/>; rel="hub", </feeds/a.xml?x=1,2>; rel="self"`,
		`<https://hub2.example/hub>; rel="alternate hub"; title="a, b"`,
		`<https://ignored.example/>; rel="next"`,
		`garbage`,
	}, base)
	if !slices.Equal(hubs, []string{"https://hub.example/", "https://hub2.example/hub"}) || self != "https://example.org/feeds/a.xml?x=1,2" {
		t.Errorf("hubs %v, self %q", hubs, self)
	}
}

func FuzzLinks(f *testing.F) {
	f.Add(`<https://hub.example/>; rel="hub", </a>; rel=self`)
	f.Add(`<,>;rel="a,b"`)
	f.Fuzz(func(t *testing.T, v string) {
		base, _ := url.Parse("https://example.org/")
		hubs, self := Links([]string{v}, base)
		for _, h := range append(hubs, self) {
			if h == "" {
				continue
			}
			if _, err := url.Parse(h); err != nil {
				t.Fatalf("%q gave %q: %v", v, h, err)
			}
		}
	})
}

func FuzzVerify(f *testing.F) {
	f.Add("sha256=00", []byte("body"))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		if Verify(header, body, []byte("k")) != nil {
			return
		}
		h := strings.ToLower(strings.TrimSpace(header))
		for _, m := range []string{"sha1", "sha256", "sha384", "sha512"} {
			if h == Sign(m, body, []byte("k")) {
				return
			}
		}
		t.Fatalf("%q verified %q", header, body)
	})
}
