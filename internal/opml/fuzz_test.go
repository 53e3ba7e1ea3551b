package opml

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzParse(f *testing.F) {
	for _, tc := range parseCases {
		f.Add([]byte(tc.in))
	}
	_ = filepath.WalkDir("testdata", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && isDocument(path) {
			if data, err := os.ReadFile(path); err == nil {
				f.Add(data)
			}
		}
		return nil
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := Parse(bytes.NewReader(data))
		if err != nil {
			if err != errNotOPML {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		checkResult(t, "fuzz input", res)
		// What Parse returns, Write writes and Parse reads back.
		var b bytes.Buffer
		if err := Write(&b, res.Title, res.Outlines); err != nil {
			t.Fatalf("Write: %v", err)
		}
		back, err := Parse(&b)
		if err != nil || len(back.Warnings) > 0 {
			t.Fatalf("Parse(Write) = %v, %q\n%s", err, back.Warnings, b.String())
		}
		// A feed is written in the folder of each of its labels.
		want, n := map[string]int{}, 0
		for _, o := range res.Outlines {
			folders := max(1, len(labels(o.Labels, "")))
			want[xmlClean(o.URL)] += folders
			n += folders
		}
		if len(back.Outlines) != n {
			t.Fatalf("Parse(Write) gave %d outlines, want %d", len(back.Outlines), n)
		}
		for _, o := range back.Outlines {
			want[o.URL]--
		}
		for u, n := range want {
			if n != 0 {
				t.Fatalf("URL %q: %d more times before than after Write", u, n)
			}
		}
	})
}

// xmlClean is s as it comes back from XML: encoding/xml writes U+FFFD
// for each byte of invalid UTF-8 and each character XML does not allow.
func xmlClean(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		ok := r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000
		if !ok || r == utf8.RuneError && n == 1 {
			r = utf8.RuneError
		}
		b.WriteRune(r)
		s = s[n:]
	}
	return strings.TrimSpace(b.String())
}

// adversarial returns inputs built to make a careless reader quadratic or
// deep, each about n repetitions long.
func adversarial(n int) map[string]string {
	return map[string]string{
		"deep folders":          strings.Repeat(`<outline text="f">`, n) + strings.Repeat(`<outline xmlUrl="u"/>`, n),
		"deep folders broken":   "<opml>&" + strings.Repeat(`<outline text="f">`, n) + strings.Repeat(`<outline xmlUrl="u"/>`, n) + `<outline a="b"c">`,
		"quotes without end":    `<opml><outline xmlUrl="u"` + strings.Repeat(` a="x"b`, n),
		"quotes in a value":     `<outline text="` + strings.Repeat(`a" `, n) + `" xmlUrl="u">`,
		"names after quotes":    `<outline text="` + strings.Repeat(`" aaaaaaaaaa`, n) + `>`,
		"unclosed html":         `<outline text="` + strings.Repeat(`<a href="x" `, n),
		"many outline starts":   strings.Repeat(`<outline `, n),
		"many attributes":       `<outline ` + strings.Repeat(`xmlUrl="u" `, n) + `/>`,
		"entities":              `<opml><outline xmlUrl="` + strings.Repeat(`&amp;&#65;&nbsp;&x`, n) + `"/>`,
		"entities broken":       `<opml>&<outline xmlUrl="` + strings.Repeat(`&amp;&#65;&nbsp;&x<`, n) + `"/>`,
		"huge category":         `<outline xmlUrl="u" category="` + strings.Repeat(`/a/b,c,`, n) + `"/>`,
		"huge category broken":  `<opml>&<outline xmlUrl="u" category="` + strings.Repeat(`/a/b,c,`, n) + `"/>`,
		"unterminated comments": strings.Repeat(`<!-- <outline xmlUrl="u"`, n),
		"deep folders scanned":  `<opml><outline a="b"c">` + strings.Repeat(`<outline text="f">`, n) + strings.Repeat(`<outline xmlUrl="u"/>`, n),
		"stray closes scanned":  `<opml><outline a="b"c">` + strings.Repeat(`</outline>`, n) + strings.Repeat(`<outline text="f"><outline xmlUrl="u"/></outline>`, n),
	}
}

// TestParseAdversarial checks that hostile shapes parse without panicking;
// BenchmarkParseAdversarial measures that they stay linear at 10x the size
// (no timed assertions here: test machines are shared and noisy).
func TestParseAdversarial(t *testing.T) {
	for name, in := range adversarial(20_000) {
		res, err := Parse(strings.NewReader(in))
		if err == nil && len(res.Outlines) > 40_000 {
			t.Errorf("%s: %d outlines from %d bytes", name, len(res.Outlines), len(in))
		}
	}
}

func BenchmarkParseAdversarial(b *testing.B) {
	for name, in := range adversarial(200_000) {
		b.Run(strings.ReplaceAll(name, " ", "-"), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				Parse(strings.NewReader(in))
			}
		})
	}
}
