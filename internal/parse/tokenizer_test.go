package parse

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"testing"
)

// stdTokens lists what encoding/xml's RawToken reads from b in the mode
// feed-parse used it in: each token with the offset after it, then the
// error that ended the reading.
func stdTokens(b []byte) []string {
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = false
	d.Entity = xml.HTMLEntity
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	var out []string
	for {
		t, err := d.RawToken()
		if err != nil {
			return append(out, fmt.Sprintf("error %s at %d", errString(err), d.InputOffset()))
		}
		out = append(out, stdToken(t)+fmt.Sprintf(" @%d", d.InputOffset()))
	}
}

func stdToken(t xml.Token) string {
	switch t := t.(type) {
	case xml.StartElement:
		var s strings.Builder
		fmt.Fprintf(&s, "start %s:%s", t.Name.Space, t.Name.Local)
		for _, a := range t.Attr {
			fmt.Fprintf(&s, " %s:%s=%q", a.Name.Space, a.Name.Local, a.Value)
		}
		return s.String()
	case xml.EndElement:
		return fmt.Sprintf("end %s:%s", t.Name.Space, t.Name.Local)
	case xml.CharData:
		return fmt.Sprintf("text %q", t)
	case xml.Comment:
		return fmt.Sprintf("comment %q", t)
	case xml.ProcInst:
		return fmt.Sprintf("pi %s %q", t.Target, t.Inst)
	case xml.Directive:
		return fmt.Sprintf("directive %q", t)
	}
	return fmt.Sprintf("%T", t)
}

// ourTokens is stdTokens for the tokenizer.
func ourTokens(b []byte) []string {
	var z tokenizer
	z.reset(b, 0)
	var out []string
	for {
		t, err := z.next()
		if err != nil {
			return append(out, fmt.Sprintf("error %s at %d", errString(err), z.offset()))
		}
		var s string
		switch t.kind {
		case tokStart:
			var sb strings.Builder
			fmt.Fprintf(&sb, "start %s:%s", t.name.space, t.name.local)
			for _, a := range t.attrs {
				fmt.Fprintf(&sb, " %s:%s=%q", a.name.space, a.name.local, a.value)
			}
			s = sb.String()
		case tokEnd:
			s = fmt.Sprintf("end %s:%s", t.name.space, t.name.local)
		case tokText:
			s = fmt.Sprintf("text %q", t.text)
		case tokComment:
			s = fmt.Sprintf("comment %q", t.text)
		case tokProcInst:
			s = fmt.Sprintf("pi %s %q", t.target, t.text)
		case tokDirective:
			s = fmt.Sprintf("directive %q", t.text)
		}
		out = append(out, s+fmt.Sprintf(" @%d", z.offset()))
	}
}

func errString(err error) string {
	if se, ok := err.(*xml.SyntaxError); ok {
		return fmt.Sprintf("%q line %d", se.Msg, se.Line)
	}
	return err.Error()
}

// asStd is b as encoding/xml must read it to agree with the tokenizer:
// "&#X" (which the tokenizer reads as "&#x", as feeds mean it) written
// "&#x", at the same length.
func asStd(b []byte) []byte { return bytes.ReplaceAll(b, []byte("&#X"), []byte("&#x")) }

// sameTokens compares the tokens of b: "&#X" that stays as written (in a
// comment, in CDATA) is "&#x" in encoding/xml's, by asStd.
func sameTokens(b []byte) (want, got string, same bool) {
	want = strings.Join(stdTokens(asStd(b)), "\n  ")
	got = strings.Join(ourTokens(b), "\n  ")
	return want, got, want == strings.ReplaceAll(got, "&#X", "&#x")
}

// tokenizerCases are documents for the tokenizer: feeds, and every kind
// of token and error encoding/xml knows. They also seed FuzzTokenizer.
var tokenizerCases = []string{
	``,
	`<rss version="2.0"><channel><title>T &amp; &lt;b&gt;</title></channel></rss>`,
	`<?xml version="1.0" encoding="windows-1252"?><a/>`,
	`<?xml version="1.1"?><a/>`,
	`<?xml-stylesheet href="x"?><!-- c --><!DOCTYPE rss [<!ENTITY x "y"> <!-- in --> ]><a b='1' c="2" d=e f>x</a>`,
	`<a><![CDATA[<b> & ]] ]]></a><![CDATA[x`,
	"<a>x\r\ny\rz</a><b c='1\r\n2'/>",
	`<a>&nbsp;&eacute;&bogus;&amp &#65;&#x42;&#X43;&#xZ;&#;&#1114112;&#99999999999999999999;&; & b</a>`,
	`<feed xmlns="http://www.w3.org/2005/Atom" xmlns:m="x"><m:a m:b="c"><x:y:z/></m:a></feed>`,
	`<a>]]></a>`, `<a>]]</a>`, `<a b="<">`, `<a b=">">`, `</>`, `< a>`, `<a =b>`, `<a b/ >`, `<a></a b>`, `<!-a>`, `<!--a--b-->`,
	`<![CDAT[x]]>`, `<?>`, `<? a?>`, `<a b="x&amp;y&#10;"/>`, `<a b="x&amp;y" c="p&amp;q" d='1&#65;'>t&amp;u</a>`, "<a>\x01</a>", "<a>\xff</a>", "<a>\uFFFE</a>", "<a b='\x00'/>",
	`<é/><a é="1"/><·/><a:b:c/>`, `<a`, `<a b`, `<a b=`, `<a b="`, `&`, `&#`, `&#x`, `&#x4`, `&am`, `<!`, `<!D`, `<![`, `<!--`, `<!-- a -`,
	`<!DOCTYPE a [<!ELEMENT a "<!-- not -->">]><a/>`, `<!DOCTYPE a [<x<y>>]><a/>`, `<!DOCTYPE a '>'>`, `text only`, `<a>&#xD800;</a>`,
	// CDATA sections taken at once, or read byte by byte (a carriage
	// return, a control character); quotes in text and in values.
	`<a><![CDATA[<p class="x">'q' &amp; ]]]]><![CDATA[]]]></a>`, "<a><![CDATA[x\r\ny\r]]></a>", "<a><![CDATA[long text\x01 ]]></a>", "<a><![CDATA[\t\n\xff]]></a>",
	`<a b='x"y' c="p'q">it's "quoted"</a>`, `<a b="x'`, `<a>'"`,
}

func TestTokenizerMatchesEncodingXML(t *testing.T) {
	for _, c := range tokenizerCases {
		if want, got, same := sameTokens([]byte(c)); !same {
			t.Errorf("%q:\nencoding/xml:\n  %s\ntokenizer:\n  %s", c, want, got)
		}
	}
	// The real feeds of the golden tests, whole.
	for name, path := range goldenInputs(t) {
		if _, _, same := sameTokens(readFile(t, path)); !same {
			t.Errorf("%s: the tokens differ from encoding/xml's", name)
		}
	}
}

// TestTokenizerUpperX checks the one reading that differs from
// encoding/xml on purpose.
func TestTokenizerUpperX(t *testing.T) {
	got := ourTokens([]byte(`<a>&#X41;&#x42;</a>`))
	if got[1] != `text "AB" @15` {
		t.Errorf("tokens %q, want the text AB", got)
	}
}

// FuzzTokenizer holds the tokenizer to encoding/xml's RawToken: the same
// tokens (names, attributes, text), offsets and errors, on any input.
func FuzzTokenizer(f *testing.F) {
	for _, c := range tokenizerCases {
		f.Add([]byte(c))
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if want, got, same := sameTokens(b); !same {
			t.Errorf("%q:\nencoding/xml:\n  %s\ntokenizer:\n  %s", b, want, got)
		}
	})
}
