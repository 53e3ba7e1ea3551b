package charsets

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/encoding/unicode/utf32"
)

// encode writes s in the named encoding.
func encode(t *testing.T, name, s string) []byte {
	t.Helper()
	switch name {
	case "utf-32le":
		b, _ := utf32.UTF32(utf32.LittleEndian, utf32.IgnoreBOM).NewEncoder().Bytes([]byte(s))
		return b
	case "utf-32be":
		b, _ := utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM).NewEncoder().Bytes([]byte(s))
		return b
	case "utf-16le":
		b, _ := unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM).NewEncoder().Bytes([]byte(s))
		return b
	case "utf-16be":
		b, _ := unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM).NewEncoder().Bytes([]byte(s))
		return b
	}
	enc, _ := charset.Lookup(name)
	if enc == nil {
		t.Fatalf("no encoding %s", name)
	}
	b, err := enc.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatalf("encode %q as %s: %v", s, name, err)
	}
	return b
}

const doc = `<?xml version="1.0" encoding="%s"?><rss><channel><title>%s</title></channel></rss>`

func TestBody(t *testing.T) {
	xml := func(decl, title string) string {
		return strings.Replace(strings.Replace(doc, "%s", decl, 1), "%s", title, 1)
	}
	tests := []struct {
		name        string
		body        []byte
		contentType string
		charset     string // what it is read as
		want        string // the UTF-8 text
		warning     string // a warning containing this; "" for none
	}{
		{"utf-8", []byte(xml("utf-8", "Café")), "", "utf-8", xml("utf-8", "Café"), ""},
		{"no declaration, utf-8", []byte("<rss>Café</rss>"), "", "utf-8", "<rss>Café</rss>", ""},
		{"utf-8 BOM", append([]byte{0xEF, 0xBB, 0xBF}, xml("utf-8", "Café")...), "", "utf-8", xml("utf-8", "Café"), ""},
		{"iso-8859-1 declared", encode(t, "iso-8859-1", xml("ISO-8859-1", "Café")), "", "windows-1252", xml("ISO-8859-1", "Café"), ""},
		{"windows-1251 declared", encode(t, "windows-1251", xml("windows-1251", "Привет")), "", "windows-1251", xml("windows-1251", "Привет"), ""},
		{"koi8-r declared", encode(t, "koi8-r", xml("KOI8-R", "Привет")), "", "koi8-r", xml("KOI8-R", "Привет"), ""},
		{"shift_jis declared", encode(t, "shift_jis", xml("Shift_JIS", "日本語<>")), "", "shift_jis", xml("Shift_JIS", "日本語<>"), ""},
		{"gb2312 declared", encode(t, "gbk", xml("GB2312", "中文")), "", "gbk", xml("GB2312", "中文"), ""},
		{"big5 declared", encode(t, "big5", xml("Big5", "中文")), "", "big5", xml("Big5", "中文"), ""},
		{"euc-kr declared", encode(t, "euc-kr", xml("EUC-KR", "한국어")), "", "euc-kr", xml("EUC-KR", "한국어"), ""},
		{"http charset over the declaration", encode(t, "windows-1251", xml("iso-8859-1", "Привет")), "text/xml; charset=windows-1251", "windows-1251", xml("iso-8859-1", "Привет"), ""},
		{"http charset quoted", encode(t, "windows-1251", xml("iso-8859-1", "Привет")), `application/rss+xml; charset="Windows-1251"`, "windows-1251", xml("iso-8859-1", "Привет"), ""},
		{"malformed content type", encode(t, "windows-1251", xml("iso-8859-1", "Привет")), `text/xml;; charset=windows-1251; x`, "windows-1251", xml("iso-8859-1", "Привет"), ""},
		{"valid utf-8 wins over the declaration", []byte(xml("ISO-8859-1", "Café")), "", "utf-8", xml("ISO-8859-1", "Café"), "the body is UTF-8"},
		{"valid utf-8 wins over http", []byte(xml("utf-8", "Café")), "text/xml; charset=iso-8859-1", "utf-8", xml("utf-8", "Café"), "the body is UTF-8"},
		{"ascii: no disagreement", []byte(xml("ISO-8859-1", "Cafe")), "", "utf-8", xml("ISO-8859-1", "Cafe"), ""},
		{"no declaration, not utf-8", encode(t, "windows-1252", "<rss>Café €</rss>"), "", "windows-1252", "<rss>Café €</rss>", "read as windows-1252"},
		{"declared utf-8 with stray latin-1", []byte("<?xml version=\"1.0\" encoding=\"utf-8\"?><r>Café \xe9t\xe9</r>"), "", "utf-8", "<?xml version=\"1.0\" encoding=\"utf-8\"?><r>Café été</r>", "2 bytes that are not UTF-8"},
		{"unknown charset, utf-8 body", []byte(xml("invalid", "Café")), "", "utf-8", xml("invalid", "Café"), `unknown charset "invalid"`},
		{"unknown charset, latin-1 body", encode(t, "windows-1252", xml("x-bogus", "Café")), "", "utf-8", xml("x-bogus", "Café"), `unknown charset "x-bogus"`},
		{"utf-16le BOM", append([]byte{0xFF, 0xFE}, encode(t, "utf-16le", xml("utf-16", "Café 😀"))...), "", "utf-16le", xml("utf-16", "Café 😀"), ""},
		{"utf-16be BOM", append([]byte{0xFE, 0xFF}, encode(t, "utf-16be", xml("utf-16", "Café"))...), "", "utf-16be", xml("utf-16", "Café"), ""},
		{"utf-16le no BOM", encode(t, "utf-16le", xml("utf-16", "Café")), "", "utf-16le", xml("utf-16", "Café"), ""},
		{"utf-16be no BOM", encode(t, "utf-16be", xml("utf-16", "Café")), "", "utf-16be", xml("utf-16", "Café"), ""},
		{"utf-16le no BOM, no declaration", encode(t, "utf-16le", "\n<rss>Café</rss>"), "", "utf-16le", "\n<rss>Café</rss>", ""},
		{"utf-32le BOM", append([]byte{0xFF, 0xFE, 0, 0}, encode(t, "utf-32le", xml("utf-32", "Café"))...), "", "utf-32le", xml("utf-32", "Café"), ""},
		{"utf-32be BOM", append([]byte{0, 0, 0xFE, 0xFF}, encode(t, "utf-32be", xml("utf-32", "Café"))...), "", "utf-32be", xml("utf-32", "Café"), ""},
		{"utf-32le no BOM", encode(t, "utf-32le", xml("utf-32", "Café")), "", "utf-32le", xml("utf-32", "Café"), ""},
		{"utf-32be no BOM", encode(t, "utf-32be", xml("utf-32", "Café")), "", "utf-32be", xml("utf-32", "Café"), ""},
		{"utf-16 declared on a utf-8 body", []byte(xml("UTF-16", "Café")), "", "utf-8", xml("UTF-16", "Café"), "the body is UTF-8"},
		{"json in utf-16le", encode(t, "utf-16le", `{"version":"x"}`), "", "utf-16le", `{"version":"x"}`, ""},
		{"empty", nil, "", "utf-8", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Body(tt.body, tt.contentType, true)
			if got.Charset != tt.charset {
				t.Errorf("charset %q, want %q", got.Charset, tt.charset)
			}
			if string(got.UTF8) != tt.want {
				t.Errorf("text %q, want %q", got.UTF8, tt.want)
			}
			warnings := strings.Join(got.Warnings, "; ")
			if tt.warning == "" && warnings != "" || !strings.Contains(warnings, tt.warning) {
				t.Errorf("warnings %q, want one containing %q", warnings, tt.warning)
			}
		})
	}
}

// TestSpan checks that every element's span in the text maps to the span
// of the same element in the body, whatever the encoding.
func TestSpan(t *testing.T) {
	text := `<?xml version="1.0"?><feed a="x>y"><entry>Café &lt;b&gt; 日本</entry><entry t='<'>two</entry><entry/><entry q="&quot;>">x</entry></feed>`
	for _, enc := range []string{"utf-8", "utf-16le", "utf-16be", "utf-32le", "utf-32be", "shift_jis", "euc-jp", "gbk", "big5", "euc-kr", "windows-1252 (mixed)"} {
		t.Run(enc, func(t *testing.T) {
			var body []byte
			var got Text
			switch enc {
			case "utf-8":
				body = append([]byte{0xEF, 0xBB, 0xBF}, text...)
				got = Body(body, "", true)
			case "windows-1252 (mixed)":
				body = []byte(strings.Replace(text, "Café", "Caf\xe9", 1))
				got = Body(body, "", true)
			case "euc-jp", "gbk", "big5", "euc-kr", "shift_jis":
				body = encode(t, enc, strings.Replace(text, "Café", "Cafe", 1))
				got = Body(body, "text/xml; charset="+enc, true)
			default:
				body = encode(t, enc, text)
				got = Body(body, "", true)
			}
			want := strings.Split(text, "<entry")
			starts := 0
			for i := 0; i < len(got.UTF8); i++ {
				if !bytes.HasPrefix(got.UTF8[i:], []byte("<entry")) {
					continue
				}
				end := i + bytes.IndexByte(got.UTF8[i:], '>') + 1
				if got.UTF8[end-2] != '/' {
					end = i + bytes.Index(got.UTF8[i:], []byte("</entry>")) + len("</entry>")
				}
				if bytes.Contains(got.UTF8[i:end], []byte(`q="`)) {
					// The quoted > must not end the tag early.
					end = i + bytes.Index(got.UTF8[i:], []byte("</entry>")) + len("</entry>")
				}
				bs, be, ok := got.Map.Span(got.UTF8, i, end)
				if !ok {
					t.Fatalf("entry at %d: no span", i)
				}
				back := Body(append(append([]byte{}, body[:0]...), body[bs:be]...), "text/xml; charset="+got.Charset, false)
				if got.Charset == "utf-8" || enc == "windows-1252 (mixed)" {
					back.UTF8 = body[bs:be]
				}
				if w := "<entry" + strings.SplitAfterN(want[starts+1], "</entry>", 2)[0]; !strings.HasPrefix(string(got.UTF8[i:end]), "<entry") || !bytes.HasPrefix(back.UTF8, []byte("<entry")) || !bytes.HasSuffix(back.UTF8, got.UTF8[end-2:end]) {
					t.Errorf("entry %d: body span %d..%d reads %q, want %q", starts, bs, be, back.UTF8, w)
				}
				starts++
			}
			if starts != 4 {
				t.Errorf("found %d entries", starts)
			}
		})
	}
}

// TestCorpus reads the encoding samples of the shared corpus.
func TestCorpus(t *testing.T) {
	dir := "../../../shared/corpus"
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no shared corpus: %v", err)
	}
	tests := []struct {
		file, charset, contains string
	}{
		{"miniflux/internal/reader/encoding/testdata/iso-8859-1.xml", "windows-1252", "Café"},
		{"miniflux/internal/reader/encoding/testdata/windows-1252.xml", "windows-1252", "Euro €"},
		{"miniflux/internal/reader/encoding/testdata/windows-1252-incorrect-prolog.xml", "utf-8", "Euro €"},
		{"miniflux/internal/reader/encoding/testdata/koi8r.xml", "koi8-r", "Пример"},
		{"miniflux/internal/reader/encoding/testdata/utf8-incorrect-prolog.xml", "utf-8", "Café"},
		{"miniflux/internal/reader/encoding/testdata/invalid-prolog.xml", "utf-8", "Café"},
		{"miniflux/internal/reader/xml/testdata/iso88591_utf8_mismatch.xml", "utf-8", "Anaïs"},
		{"miniflux/internal/reader/parser/testdata/no_encoding_ISO-8859-1.xml", "windows-1252", "études"},
		{"miniflux/internal/reader/parser/testdata/encoding_WINDOWS-1251.xml", "windows-1251", "Новый цитатник"},
		{"simplepie/tests/data/feed-utf16le.xml", "utf-16le", "<rss"},
		{"simplepie/tests/data/feed-utf16be.xml", "utf-16be", "<rss"},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join(dir, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got := Body(body, "", true)
			if got.Charset != tt.charset {
				t.Errorf("charset %q, want %q (warnings %q)", got.Charset, tt.charset, got.Warnings)
			}
			if !bytes.Contains(got.UTF8, []byte(tt.contains)) {
				t.Errorf("text lacks %q: %.300s", tt.contains, got.UTF8)
			}
		})
	}
}

func FuzzBody(f *testing.F) {
	f.Add([]byte("<rss>x</rss>"), "")
	f.Add([]byte("\xff\xfe<\x00r\x00"), "text/xml")
	f.Add([]byte("<?xml version='1.0' encoding='koi8-r'?><a>\xf0</a>"), "text/xml; charset=utf-16")
	f.Fuzz(func(t *testing.T, body []byte, ct string) {
		got := Body(body, ct, true)
		if !bytes.Equal(got.UTF8, bytes.ToValidUTF8(got.UTF8, nil)) && got.Charset == "utf-8" && got.Map.Identity() {
			t.Errorf("identity text is not valid UTF-8")
		}
		// Every "<" of the text maps to a "<" of the body.
		for i := 0; i < len(got.UTF8); i++ {
			if got.UTF8[i] != '<' {
				continue
			}
			j := bytes.IndexByte(got.UTF8[i:], '>')
			if j < 0 {
				break
			}
			got.Map.Span(got.UTF8, i, i+j+1) // must not panic
		}
	})
}

// checkRef is check as three passes: utf8.Valid, then a search for the
// characters XML forbids, byte by byte.
func checkRef(b []byte) (valid, xmlChars bool) {
	if !utf8.Valid(b) {
		return false, false
	}
	for i, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			return true, false
		}
		if c == 0xEF && i+2 < len(b) && b[i+1] == 0xBF && b[i+2] >= 0xBE {
			return true, false
		}
	}
	return true, true
}

// TestCheckBytes compares check with checkRef on every byte that may
// begin a character followed by the bytes at the edges of the ranges
// UTF-8 allows, at every place of an eight-byte step.
func TestCheckBytes(t *testing.T) {
	edges := []byte{0x00, 0x09, 0x0A, 0x0D, 0x1F, 0x20, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBD, 0xBE, 0xBF, 0xC0, 0xFF}
	for c0 := 0; c0 < 256; c0++ {
		for _, c1 := range edges {
			for _, c2 := range edges {
				for _, c3 := range []byte{0x80, 0xBF, 'x'} {
					seq := string([]byte{byte(c0), c1, c2, c3})
					for pad := 0; pad < 9; pad++ {
						for _, s := range []string{strings.Repeat("a", pad) + seq, strings.Repeat("a", pad) + seq + "plain text", strings.Repeat("é", pad) + seq[:2]} {
							gv, gx := check([]byte(s))
							if wv, wx := checkRef([]byte(s)); gv != wv || gv && gx != wx {
								t.Fatalf("check(%q) = %v, %v; want %v, %v", s, gv, gx, wv, wx)
							}
						}
					}
				}
			}
		}
	}
}

// FuzzCheck holds check, one pass of eight bytes at a time, to checkRef.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"", "plain ascii text", "\t\r\n", "a\x01b", "é\uFFFE", "\uFFFF", "\xef\xbf", "日本語のテキスト", "\xed\xa0\x80", "\xf4\x90\x80\x80", "0123456\xc3", "\U0010FFFF"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		gv, gx := check(b)
		if wv, wx := checkRef(b); gv != wv || gv && gx != wx {
			t.Errorf("check(%q) = %v, %v; want %v, %v", b, gv, gx, wv, wx)
		}
	})
}
