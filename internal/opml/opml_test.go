package opml

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

// parseCase is one Parse table case; FuzzParse seeds from these too.
type parseCase struct {
	name     string
	in       string
	title    string
	want     []Outline
	warnings []string // substrings, one per expected warning, in order
	err      string   // substring of the expected error
}

// feed is an Outline with its usual fields, for short table entries.
func feed(line int, url, title string, labels ...string) Outline {
	if labels == nil {
		labels = []string{}
	}
	return Outline{URL: url, Title: title, Labels: labels, Line: line}
}

func withType(o Outline, typ, htmlURL string) Outline {
	o.Type, o.HTMLURL = typ, htmlURL
	return o
}

var parseCases = []parseCase{
	{
		name: "opml 1.0",
		in: `<?xml version="1.0"?>
<opml version="1.0">
<head><title> My feeds </title></head>
<body>
<outline text="Go blog" type="rss" xmlUrl="https://go.dev/blog/feed.atom" htmlUrl="https://go.dev/blog"/>
<outline text="Spaced" xmlUrl="  https://example.org/rss  "></outline>
</body>
</opml>`,
		title: "My feeds",
		want: []Outline{
			withType(feed(5, "https://go.dev/blog/feed.atom", "Go blog"), "rss", "https://go.dev/blog"),
			feed(6, "https://example.org/rss", "Spaced"),
		},
	},
	{
		name: "opml 2.0 nested folders and category",
		in: `<?xml version="1.0" encoding="UTF-8"?>
<opml version="2.0">
  <head><title>Nested</title><dateCreated>Mon, 31 Oct 2005 19:23:00 GMT</dateCreated></head>
  <body>
    <outline text="Tech">
      <outline title="Go" text="ignored">
        <outline type="atom" text="A" title=" " xmlUrl="https://a.example/feed" category="/Tech/Go,Programming, ,/News//World"/>
      </outline>
      <outline text="B" xmlUrl="https://b.example/feed">
        <outline text="C" xmlUrl="https://c.example/feed"/>
      </outline>
      <outline>
        <outline text="D" xmlUrl="https://d.example/feed"/>
      </outline>
    </outline>
    <outline xmlUrl="https://e.example/feed" category="Solo"/>
    <outline text="Empty folder"/>
  </body>
</opml>`,
		title: "Nested",
		want: []Outline{
			withType(feed(7, "https://a.example/feed", "A", "Tech", "Go", "Programming", "News", "World"), "atom", ""),
			feed(9, "https://b.example/feed", "B", "Tech"),
			feed(10, "https://c.example/feed", "C", "Tech"),
			feed(13, "https://d.example/feed", "D", "Tech"),
			feed(16, "https://e.example/feed", "", "Solo"),
		},
	},
	{
		name: "repeats are kept",
		in: `<opml><body><outline text="Dup" xmlUrl="https://dup.example/"/>
<outline text="Dup again" xmlUrl="https://dup.example/"/></body></opml>`,
		want: []Outline{
			feed(1, "https://dup.example/", "Dup"),
			feed(2, "https://dup.example/", "Dup again"),
		},
	},
	{
		name: "case-insensitive names",
		in: `<OPML VERSION="1.1"><HEAD><TITLE>Caps</TITLE></HEAD><BODY>
<OUTLINE TEXT="Folder">
<OUTLINE XMLURL="https://1.example/" TITLE="One"/>
<outline xmlurl="https://2.example/" text="Two"/>
<Outline xmlURL="https://3.example/" Text="Three" HTMLURL="https://3.example/home" TYPE="RSS" CATEGORY="Cat"/>
</OUTLINE>
</BODY></OPML>`,
		title: "Caps",
		want: []Outline{
			feed(3, "https://1.example/", "One", "Folder"),
			feed(4, "https://2.example/", "Two", "Folder"),
			withType(feed(5, "https://3.example/", "Three", "Folder", "Cat"), "RSS", "https://3.example/home"),
		},
	},
	{
		name: "bare ampersands",
		in: `<opml version="2.0"><head><title>Tom & Jerry</title></head><body>
<outline text="R&D">
<outline text="Q&A" xmlUrl="https://x.example/?a=1&b=2&para=3&amp;c=4"/>
</outline></body></opml>`,
		title: "Tom & Jerry",
		want: []Outline{
			feed(3, "https://x.example/?a=1&b=2&para=3&c=4", "Q&A", "R&D"),
		},
		warnings: []string{"line 1: not well-formed XML (invalid character entity & (no semicolon)); read it leniently"},
	},
	{
		name: "HTML entities",
		in: `<opml version="2.0"><body>
<outline text="Caf&eacute;&nbsp;Bar &hellip; &#233;&#xE9; &bogus;" xmlUrl="https://e.example/?q=1&amp;r=2"/>
</body></opml>`,
		want: []Outline{
			feed(2, "https://e.example/?q=1&r=2", "Café\u00a0Bar … éé &bogus;"),
		},
		warnings: []string{"line 2: not well-formed XML (invalid character entity &eacute;); read it leniently"},
	},
	{
		name: "ISO-8859-1",
		in: "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<opml version=\"1.1\"><head><title>Caf\xe9s</title></head><body>\n" +
			"<outline text=\"M\xfcnchen\"><outline text=\"Caf\xe9 \xabx\xbb\" xmlUrl=\"https://cafe.example/\"/></outline>\n</body></opml>",
		title: "Cafés",
		want:  []Outline{feed(3, "https://cafe.example/", "Café «x»", "München")},
	},
	{
		name: "windows-1252",
		in: "<?xml version=\"1.0\" encoding=\"windows-1252\"?>\n<opml><body>\n" +
			"<outline text=\"\x93Quoted\x94 \x80\" xmlUrl=\"https://q.example/\"/>\n</body></opml>",
		want: []Outline{feed(3, "https://q.example/", "“Quoted” €")},
	},
	{
		name: "declared ISO-8859-1 but UTF-8",
		in: "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<opml><body>\n" +
			"<outline text=\"Ajaxian » Front Page\" xmlUrl=\"https://ajaxian.example/\"/>\n</body></opml>",
		want:     []Outline{feed(3, "https://ajaxian.example/", "Ajaxian » Front Page")},
		warnings: []string{`declared encoding "ISO-8859-1" but the content is UTF-8`},
	},
	{
		name: "unknown encoding",
		in: "<?xml version=\"1.0\" encoding=\"x-klingon\"?>\n<opml><body>\n" +
			"<outline text=\"K\" xmlUrl=\"https://k.example/\"/>\n</body></opml>",
		want:     []Outline{feed(3, "https://k.example/", "K")},
		warnings: []string{`line 1: unknown encoding "x-klingon"; read as UTF-8`},
	},
	{
		name: "UTF-16 with BOM",
		in: utf16LE("<?xml version=\"1.0\" encoding=\"UTF-16\"?>\n<opml><body>\n" +
			"<outline text=\"Ünïcödé 𝄞\" xmlUrl=\"https://u.example/\"/>\n</body></opml>"),
		want: []Outline{feed(3, "https://u.example/", "Ünïcödé 𝄞")},
	},
	{
		name: "UTF-16BE without BOM",
		in:   utf16BE(`<opml><body><outline text="Ö" xmlUrl="https://be.example/"/></body></opml>`),
		want: []Outline{feed(1, "https://be.example/", "Ö")},
	},
	{
		name: "whitespace before the declaration",
		in: "\n\n   \t<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<opml><body>\n" +
			"<outline text=\"W\" xmlUrl=\"https://w.example/\"/>\n</body></opml>",
		want: []Outline{feed(5, "https://w.example/", "W")},
	},
	{
		name: "junk and BOM before the root",
		in: "\ufeffHTTP/1.1 200 OK junk\n<?xml version=\"1.0\"?>\n<opml><body>\n" +
			"<outline text=\"J\" xmlUrl=\"https://j.example/\"/>\n</body></opml>",
		want: []Outline{feed(4, "https://j.example/", "J")},
	},
	{
		name: "truncated in a value",
		in: `<opml><head><title>Cut</title></head><body>
<outline text="Folder">
<outline text="A" xmlUrl="https://a.example/"/>
<outline text="B" xmlUrl="https://b.example/"/>
<outline text="C" xmlUrl="https://c.exa`,
		title: "Cut",
		want: []Outline{
			feed(3, "https://a.example/", "A", "Folder"),
			feed(4, "https://b.example/", "B", "Folder"),
		},
		warnings: []string{
			"line 5: not well-formed XML (unexpected EOF); recovered the rest by scanning for <outline> tags",
			"line 5: skipped an <outline> whose xmlUrl value is cut off",
		},
	},
	{
		name: "truncated after the URL",
		in: `<opml><body><outline text="Folder">
<outline text="A" xmlUrl="https://a.example/"/>
<outline text="B" category="x" xmlUrl="https://b.example/" htmlU`,
		want: []Outline{
			feed(2, "https://a.example/", "A", "Folder"),
			feed(3, "https://b.example/", "B", "Folder", "x"),
		},
		warnings: []string{"line 3: not well-formed XML (unexpected EOF); recovered the rest"},
	},
	{
		name: "starts mid-element",
		in: `le.org/" htmlUrl="https://example.org/"/>
        <outline type="rss" text="One" xmlUrl="https://one.example/feed"/>
        <outline type="rss" text="Cut" tit
        <outline type="rss" text="Two" xmlUrl="https://two.example/feed"/>
    </body>
</opml>`,
		want: []Outline{
			withType(feed(2, "https://one.example/feed", "One"), "rss", ""),
			withType(feed(4, "https://two.example/feed", "Two"), "rss", ""),
		},
		warnings: []string{"line 4: not well-formed XML (expected attribute name in element); recovered the rest"},
	},
	{
		name: "unescaped quotes and raw HTML in values",
		in: `<opml version="1.0"><body><outline text="Folder">
<outline text="Before" xmlUrl="https://before.example/"/>
<outline text="Say "hi" there" description="Works at <a href="https://sq.example/">Square</a>, "loud"." xmlUrl="https://q.example/?a=1&amp;b=&#50;" type="rss" />
<outline text="Газета "Коммерсантъ". Главное" xmlUrl="https://k.example/" type="rss"/>
<outline text="x < y" type="link" url="https://not.a.feed/"/>
<outline text='Single "quoted"' xmlUrl='https://s.example/'/>
</outline></body></opml>`,
		want: []Outline{
			feed(2, "https://before.example/", "Before", "Folder"),
			withType(feed(3, "https://q.example/?a=1&b=2", `Say "hi" there`, "Folder"), "rss", ""),
			withType(feed(4, "https://k.example/", `Газета "Коммерсантъ". Главное`, "Folder"), "rss", ""),
			feed(6, "https://s.example/", `Single "quoted"`, "Folder"),
		},
		warnings: []string{"line 3: not well-formed XML (expected attribute name in element); recovered the rest"},
	},
	{
		name: "two problems",
		in: `<opml><body>
<outline text="A & B" xmlUrl="https://a.example/"/>
<outline text="C "D"" xmlUrl="https://c.example/"/>
</body></opml>`,
		want: []Outline{feed(2, "https://a.example/", "A & B"), feed(3, "https://c.example/", `C "D"`)},
		warnings: []string{
			"line 2: not well-formed XML (invalid character entity & (no semicolon)); read it leniently",
			"line 3: not well-formed XML (expected attribute name in element); recovered the rest",
		},
	},
	{
		name: "illegal character",
		in:   "<opml><head><title>T\x00</title></head><body>\n<outline text=\"A\" xmlUrl=\"https://a.example/\"/>\n</body></opml>",
		want: []Outline{feed(2, "https://a.example/", "A")},
		warnings: []string{
			"line 1: not well-formed XML (illegal character code U+0000); recovered the rest",
		},
	},
	{
		name: "html void element in head",
		in: `<opml><head><title>Links & more</title><link>https://x.example/</link></head><body>
<outline text="F"><outline text="A" xmlUrl="https://a.example/"/></outline></body></opml>`,
		title:    "Links & more",
		want:     []Outline{feed(2, "https://a.example/", "A", "F")},
		warnings: []string{"line 1: not well-formed XML (unexpected end element </link>); recovered the rest"},
	},
	{
		name: "html void element, then a bare ampersand",
		in: `<opml><head><title>T</title><link>https://x.example/</link></head><body>
<outline text="F"><outline text="A" xmlUrl="https://a.example/"/>
<outline text="B & C" xmlUrl="https://b.example/"/></outline></body></opml>`,
		title: "T",
		want:  []Outline{feed(2, "https://a.example/", "A", "F"), feed(3, "https://b.example/", "B & C", "F")},
		warnings: []string{
			"line 3: not well-formed XML (invalid character entity & (no semicolon)); recovered the rest by scanning for <outline> tags",
		},
	},
	{
		name: "recovery inside nested folders",
		in: `<opml><body>
<outline text="Tech">
<outline title="Go" text="ignored">
<outline text="A" xmlUrl="https://a.example/"/>
<outline text="B "broken"" xmlUrl="https://b.example/"/>
<outline text="C" xmlUrl="https://c.example/" category="x,/y/z"/>
</outline>
<outline text="D" xmlUrl="https://d.example/"/>
</outline>
<outline text="E" xmlUrl="https://e.example/"/>
</body></opml>`,
		want: []Outline{
			feed(4, "https://a.example/", "A", "Tech", "Go"),
			feed(5, "https://b.example/", `B "broken"`, "Tech", "Go"),
			feed(6, "https://c.example/", "C", "Tech", "Go", "x", "y", "z"),
			feed(8, "https://d.example/", "D", "Tech"),
			feed(10, "https://e.example/", "E"),
		},
		warnings: []string{"line 5: not well-formed XML (expected attribute name in element); recovered the rest"},
	},
	{
		name: "folders opened and closed after the failure point",
		in: `<opml><body>
<outline text="Bro"ken" xmlUrl="https://0.example/"/>
<outline text="LEA, GOV, CERT">
<outline text="UI / UX">
<outline text="A" xmlUrl="https://a.example/" category="x, y"/>
</outline>
<outline text="B" xmlUrl="https://b.example/"/>
</outline>
<outline text="Empty"/>
<outline text="C" xmlUrl="https://c.example/"/>
</body></opml>`,
		want: []Outline{
			feed(2, "https://0.example/", `Bro"ken`),
			feed(5, "https://a.example/", "A", "LEA, GOV, CERT", "UI / UX", "x", "y"),
			feed(7, "https://b.example/", "B", "LEA, GOV, CERT"),
			feed(10, "https://c.example/", "C"),
		},
		warnings: []string{"line 2: not well-formed XML (expected attribute name in element); recovered the rest"},
	},
	{
		name: "folder names are not split",
		in: `<opml version="2.0"><body>
<outline text="LEA, GOV, CERT" title="LEA, GOV, CERT">
<outline text="UI / UX">
<outline text="CERT-EU" xmlUrl="https://cert.example/" category="GOV,Security"/>
</outline>
</outline>
</body></opml>`,
		want: []Outline{feed(4, "https://cert.example/", "CERT-EU", "LEA, GOV, CERT", "UI / UX", "GOV", "Security")},
	},
	{
		name: "feed outlines with children around the failure point",
		in: `<opml><body>
<outline text="Folder">
<outline text="Parent" xmlUrl="https://p.example/">
<outline text="Bro"ken" xmlUrl="https://0.example/"/>
</outline>
<outline text="Parent 2" xmlUrl="https://p2.example/">
<outline text="Child" xmlUrl="https://c.example/"/>
</outline>
<outline text="Sibling" xmlUrl="https://s.example/"/>
</outline>
<outline text="Top" xmlUrl="https://t.example/"/>
</body></opml>`,
		want: []Outline{
			feed(3, "https://p.example/", "Parent", "Folder"),
			feed(4, "https://0.example/", `Bro"ken`, "Folder"),
			feed(6, "https://p2.example/", "Parent 2", "Folder"),
			feed(7, "https://c.example/", "Child", "Folder"),
			feed(9, "https://s.example/", "Sibling", "Folder"),
			feed(11, "https://t.example/", "Top"),
		},
		warnings: []string{"line 4: not well-formed XML (expected attribute name in element); recovered the rest"},
	},
	{
		name: "stray </outline> with nothing open",
		in: `<opml><body>
<outline text="F">
<outline text="Bro"ken" xmlUrl="https://0.example/"/>
</outline></outline></outline>
<outline text="G">
<outline text="A" xmlUrl="https://a.example/"/>
</outline>
</outline>
<outline text="B" xmlUrl="https://b.example/"/>
</body></opml>`,
		want: []Outline{
			feed(3, "https://0.example/", `Bro"ken`, "F"),
			feed(6, "https://a.example/", "A", "G"),
			feed(9, "https://b.example/", "B"),
		},
		warnings: []string{"line 3: not well-formed XML (expected attribute name in element); recovered the rest"},
	},
	{
		name: "failure in a folder's start tag",
		in: `<opml><body>
<outline text="Say "hi"">
<outline text="A" xmlUrl="https://a.example/"/>
</outline>
<outline text="B" xmlUrl="https://b.example/"/>
</body></opml>`,
		want: []Outline{
			feed(3, "https://a.example/", "A", `Say "hi"`),
			feed(5, "https://b.example/", "B"),
		},
		warnings: []string{"line 2: not well-formed XML (expected attribute name in element); recovered the rest"},
	},
	{
		name: "folders nested too deep, across the failure point",
		in: "<opml><body>\n" + nestedFolders(1, 17) +
			"<outline text=\"Bro\"ken\" xmlUrl=\"https://0.example/\"/>\n" +
			nestedFolders(18, 18) +
			"<outline text=\"A\" xmlUrl=\"https://a.example/\"/>\n" +
			"</outline></outline>\n" +
			"<outline text=\"B\" xmlUrl=\"https://b.example/\"/>\n" +
			"</outline>\n" +
			"<outline text=\"C\" xmlUrl=\"https://c.example/\"/>\n" +
			"</body></opml>",
		want: []Outline{
			feed(19, "https://0.example/", `Bro"ken`, folderNames(16)...),
			feed(21, "https://a.example/", "A", folderNames(16)...),
			feed(23, "https://b.example/", "B", folderNames(16)...),
			feed(25, "https://c.example/", "C", folderNames(15)...),
		},
		warnings: []string{
			"line 18: folders nested more than 16 deep; the deeper folder names are not used as labels",
			"line 19: not well-formed XML (expected attribute name in element); recovered the rest",
		},
	},
	{
		name: "folders nested too deep after the failure point",
		in: "<opml><body>\n" +
			"<outline text=\"Bro\"ken\" xmlUrl=\"https://0.example/\"/>\n" +
			nestedFolders(1, 18) +
			"<outline text=\"A\" xmlUrl=\"https://a.example/\"/>\n",
		want: []Outline{
			feed(2, "https://0.example/", `Bro"ken`),
			feed(21, "https://a.example/", "A", folderNames(16)...),
		},
		warnings: []string{
			"line 2: not well-formed XML (expected attribute name in element); recovered the rest",
			"line 19: folders nested more than 16 deep; the deeper folder names are not used as labels",
		},
	},
	{
		name: "line numbers",
		in: "<opml>\r\n<head/>\r\n<body>\r\n\r\n<outline\r\n  text=\"Multi\"\r\n  xmlUrl=\"https://m.example/\"/>\r\n" +
			"<!-- <outline xmlUrl=\"https://comment.example/\"/> -->\r\n<outline text=\"Next\" xmlUrl=\"https://n.example/\"/><outline text=\"Same\" xmlUrl=\"https://s.example/\"/>\r\n</body></opml>",
		want: []Outline{
			feed(5, "https://m.example/", "Multi"),
			feed(9, "https://n.example/", "Next"),
			feed(9, "https://s.example/", "Same"),
		},
	},
	{
		name:  "empty body",
		in:    `<?xml version="1.0"?><opml version="2.0"><head><title>Empty</title></head><body/></opml>`,
		title: "Empty",
		want:  []Outline{},
	},
	{
		name: "folders only",
		in:   `<opml version="2.0"><body><outline text="A"><outline text="B"/></outline></body></opml>`,
		want: []Outline{},
	},
	{
		name: "obsolete outlineDocument root",
		in:   `<outlineDocument><body><outline text="O" xmlUrl="https://o.example/"/></body></outlineDocument>`,
		want: []Outline{feed(1, "https://o.example/", "O")},
	},
	{name: "empty input", in: "", err: "no <outline> elements found"},
	{name: "only whitespace", in: " \n\t ", err: "no <outline> elements found"},
	{name: "not xml", in: "{not xml :)\n", err: "no <outline> elements found (is this an OPML file?)"},
	{name: "json", in: `{"version":"https://jsonfeed.org/version/1.1","items":[{"url":"https://x.example/"}]}`, err: "no <outline>"},
	{
		name: "html page",
		in:   "<!DOCTYPE html>\n<html><head><title>Feeds</title><link rel=\"alternate\" type=\"application/rss+xml\" href=\"/rss\"></head><body><p>Hi &copy; 2024<br></body></html>",
		err:  "no <outline>",
	},
	{
		name: "rss feed",
		in:   `<?xml version="1.0"?><rss version="2.0"><channel><title>x</title><link>https://x.example/</link></channel></rss>`,
		err:  "no <outline>",
	},
	{name: "broken html", in: `<html><body><p class="a>b</p></div></span>`, err: "no <outline>"},
}

// nestedFolders opens folders named f<from> to f<to>, one per line.
func nestedFolders(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "<outline text=\"f%d\">\n", i)
	}
	return b.String()
}

// folderNames is f1 to f<n>.
func folderNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("f%d", i+1)
	}
	return names
}

func TestParse(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Parse(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q (result %+v)", err, tc.err, res)
				}
				if !strings.HasPrefix(err.Error(), "opml: ") {
					t.Errorf("error %q lacks the opml: prefix", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if res.Title != tc.title {
				t.Errorf("Title = %q, want %q", res.Title, tc.title)
			}
			if !reflect.DeepEqual(res.Outlines, tc.want) {
				t.Errorf("Outlines:\n got %+v\nwant %+v", res.Outlines, tc.want)
			}
			if len(res.Warnings) != len(tc.warnings) {
				t.Fatalf("Warnings = %q, want %d matching %q", res.Warnings, len(tc.warnings), tc.warnings)
			}
			for i, w := range tc.warnings {
				if !strings.Contains(res.Warnings[i], w) {
					t.Errorf("Warnings[%d] = %q, want it to contain %q", i, res.Warnings[i], w)
				}
			}
		})
	}
}

func TestParseInputCap(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 64 MiB")
	}
	_, err := Parse(&zeros{n: maxInput + 1})
	if err == nil || err.Error() != "opml: file over 64 MiB" {
		t.Fatalf("err = %v, want opml: file over 64 MiB", err)
	}
}

// zeros is a reader of n spaces, without holding them.
type zeros struct{ n int }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	if len(p) > z.n {
		p = p[:z.n]
	}
	for i := range p {
		p[i] = ' '
	}
	z.n -= len(p)
	return len(p), nil
}

func TestUnescape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"a&amp;b&lt;&gt;&quot;&apos;", `a&b<>"'`},
		{"&#65;&#x42;&#X43;", "ABC"},
		{"&eacute;&nbsp;&hellip;&rarr;", "é\u00a0…→"},
		{"?a=1&para=2&sect=3&copy=4", "?a=1&para=2&sect=3&copy=4"}, // no ';': not references
		{"&ampx;&bogus;&;&#;&", "&ampx;&bogus;&;&#;&"},
		{"&semi;&amp", ";&amp"},
		{"&#0;", "\ufffd"},
	} {
		if got := unescape(tc.in); got != tc.want {
			t.Errorf("unescape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// utf16LE encodes s as UTF-16LE with a byte order mark.
func utf16LE(s string) string {
	b := []byte{0xFF, 0xFE}
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			hi, lo := 0xD800+(r>>10), 0xDC00+(r&0x3FF)
			b = append(b, byte(hi), byte(hi>>8), byte(lo), byte(lo>>8))
			continue
		}
		b = append(b, byte(r), byte(r>>8))
	}
	return string(b)
}

// utf16BE encodes s, all in the Basic Multilingual Plane, as UTF-16BE.
func utf16BE(s string) string {
	var b []byte
	for _, r := range s {
		b = append(b, byte(r>>8), byte(r))
	}
	return string(b)
}
