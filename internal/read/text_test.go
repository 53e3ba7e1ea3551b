package read

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/table"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// textCases are HTML fragments and the text they read as (width 40, base
// https://example.org/post/1); they also seed FuzzText.
var textCases = []struct {
	name, in, want string
	links          []string
}{
	{"plain", "Just text.", "Just text.\n", nil},
	{"plain paragraphs", "One line\nwrapped.\n\nTwo &amp; three.", "One line wrapped.\n\nTwo & three.\n", nil},
	{"entities", "<p>Fish &amp; chips &lt;3 &eacute;t&#233; &#x263A;</p>", "Fish & chips <3 été ☺\n", nil},
	{"paragraphs", "<p>One</p><p>Two</p>", "One\n\nTwo\n", nil},
	{"br", "a<br>b<br/><br>c", "a\nb\n\nc\n", nil},
	{"whitespace", "<p>  lots \n\t of   space </p>", "lots of space\n", nil},
	{"inline", "<p>wor<b>ld</b> <i>x</i></p>", "world x\n", nil},
	{"wrap", "<p>aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk</p>", "aaaa bbbb cccc dddd eeee ffff gggg hhhh\niiii jjjj kkkk\n", nil},
	{"long word", "<p>a " + strings.Repeat("x", 50) + " b</p>", "a\n" + strings.Repeat("x", 50) + "\nb\n", nil},
	{"links", `<p>See <a href="/a">this</a> and <a href="https://other.example/">that</a>, <a href="/a">again</a>.</p>`,
		"See this[1] and that[2], again[1].\n", []string{"https://example.org/a", "https://other.example/"}},
	{"bad links", `<a href="javascript:alert(1)">js</a> <a href="#top">top</a> <a href="data:text/html,x">d</a> <a href="/e"></a>`, "js top d\n", nil},
	{"image", `<p><img src="pic.png" alt="A cat"> <img src="/pixel.gif" width="1" height="1"><img src="x.png"></p>`,
		"[image: A cat][1] [image][2]\n", []string{"https://example.org/post/pic.png", "https://example.org/post/x.png"}},
	{"linked image", `<a href="/big.png"><img src="/small.png" alt="S"></a>`, "[image: S][1][2]\n", []string{"https://example.org/small.png", "https://example.org/big.png"}},
	{"scripts and styles", "<p>a</p><script>alert('x')</script><style>p { color: red }</style><noscript>no</noscript><template>t</template><p>b</p>", "a\n\nb\n", nil},
	{"forms", "<form>Name <input value=x><select><option>o</option></select><button>Go</button></form>", "Name\n", nil},
	{"headings", "<h1>Title</h1><p>text</p><h2>Sub</h2>", "Title\n\ntext\n\nSub\n", nil},
	{"list", "<p>Before</p><ul><li>one</li><li>two</li></ul><p>After</p>", "Before\n\n- one\n- two\n\nAfter\n", nil},
	{"ordered list", `<ol start="9"><li>nine</li><li>ten</li></ol>`, "9. nine\n10. ten\n", nil},
	{"nested list", "<ul><li>a<ul><li>b</li></ul></li><li>c</li></ul>", "- a\n  - b\n- c\n", nil},
	{"list wrap", "<ul><li>aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii</li></ul>", "- aaaa bbbb cccc dddd eeee ffff gggg\n  hhhh iiii\n", nil},
	{"quote", "<p>He said:</p><blockquote><p>One</p><p>Two</p></blockquote><p>End</p>", "He said:\n\n> One\n>\n> Two\n\nEnd\n", nil},
	{"pre", "<p>Code:</p><pre>if x {\n\treturn &lt;y&gt;\n}</pre><p>done</p>", "Code:\n\n    if x {\n        return <y>\n    }\n\ndone\n", nil},
	{"pre br", "<pre>a<br>b</pre>", "    a\n    b\n", nil},
	{"pre blank lines", "<pre>\n a\n\n \n\n b \n \n</pre>c", "     a\n\n     b\n\nc\n", nil},
	{"table", "<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>", "k | v\na | 1\n", nil},
	{"hr", "<p>a</p><hr><p>b</p>", "a\n\n* * *\n\nb\n", nil},
	{"divs", "<div>a</div><div>b</div>", "a\nb\n", nil},
	{"controls", "<p>a\x1b[31mred\x07 b\u0085c</p>", "a[31mred bc\n", nil},
	{"soft hyphen", "<p>hy\u00adphen</p>", "hyphen\n", nil},
	{"q", "<p>a <q>b</q></p>", "a “b”\n", nil},
	{"video", `<video src="/v.mp4"></video><audio><source src="/a.mp3"></audio>`, "[video][1] [audio][2]\n", []string{"https://example.org/v.mp4", "https://example.org/a.mp3"}},
	{"iframe", `<iframe src="https://www.youtube.com/embed/x"></iframe>`, "[embedded][1]\n", []string{"https://www.youtube.com/embed/x"}},
	{"empty", "", "", nil},
	{"only tags", "<p></p><div> </div>", "", nil},
	{"unclosed", "<p>a <b>b <i>c", "a b c\n", nil},
	{"comment", "a<!-- hidden -->b", "ab\n", nil},
	{"wide", "<p>日本語のテキストはここにありますそして長い行は折り返されます 次</p>", "日本語のテキストはここにありますそして長い行は折り返されます\n次\n", nil},
}

func TestText(t *testing.T) {
	base, _ := url.Parse("https://example.org/post/1")
	for _, tc := range textCases {
		t.Run(tc.name, func(t *testing.T) {
			got, links := Text(tc.in, base, 40)
			if got != tc.want {
				t.Errorf("Text(%q):\n%s\nwant:\n%s", tc.in, got, tc.want)
			}
			if strings.Join(links, " ") != strings.Join(tc.links, " ") {
				t.Errorf("links %q, want %q", links, tc.links)
			}
		})
	}
}

// TestTextGolden renders the content (else the summary) of real feeds'
// entries, from testdata/feeds and, when it is there, the shared corpus:
// testdata/text/NAME.txt, rewritten by -update.
func TestTextGolden(t *testing.T) {
	files := []string{
		"../../testdata/feeds/TechCrunch.xml",
		"../../testdata/feeds/AmazonWebServicesBlog.xml",
		"../../testdata/feeds/TenderLovemaking.xml",
		"../../testdata/feeds/json_feed.json",
		"../../testdata/feeds/youtube_atom.xml",
	}
	corpus := "../../../shared/corpus/feedjira/spec/sample_feeds"
	for _, f := range []string{"AtomEscapedHTMLInPreTag.xml", "HuffPostCanada.xml", "SamRuby.xml", "GiantRobotsSmashingIntoOtherGiantRobots.xml", "PaulDixExplainsNothing.xml", "FeedBurnerXHTML.xml"} {
		files = append(files, filepath.Join(corpus, f))
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(file)
			if os.IsNotExist(err) && strings.Contains(file, "corpus") {
				t.Skip("no shared corpus here")
			}
			if err != nil {
				t.Fatal(err)
			}
			feed, err := parse.ParseFeed(body, parse.Source{FeedID: "00000000-0000-5000-8000-000000000000", BaseURL: "https://example.org/feed"})
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for i, e := range feed.Entries[:min(3, len(feed.Entries))] {
				html := e.Content
				if strings.TrimSpace(html) == "" {
					html = e.Summary
				}
				base, _ := url.Parse(e.CanonicalLink)
				text, links := Text(html, base, 72)
				fmt.Fprintf(&b, "=== entry %d: %s\n%s", i+1, e.Title, text)
				for j, l := range links {
					fmt.Fprintf(&b, "[%d] %s\n", j+1, l)
				}
				checkText(t, html, text, links, 72)
			}
			golden(t, filepath.Join("testdata", "text", name+".txt"), b.String())
		})
	}
}

// golden compares got with the file, or writes it with -update.
func golden(t *testing.T, file, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it); got:\n%s", file, got)
	}
}

var refs = regexp.MustCompile(`\[([0-9]+)\]`)

// checkText checks what holds of every rendering: valid UTF-8 without
// control characters but newlines, no line over the width but for a
// single word, no blank line first or twice, each link numbered in the
// text.
func checkText(t testing.TB, in, text string, links []string, width int) {
	t.Helper()
	if !utf8.ValidString(text) {
		t.Fatalf("%q: invalid UTF-8 in %q", in, text)
	}
	for _, r := range text {
		if r != '\n' && isControl(r) {
			t.Fatalf("%q: control character %U in %q", in, r, text)
		}
	}
	if text != "" && (!strings.HasSuffix(text, "\n") || strings.HasPrefix(text, "\n") || strings.Contains(text, "\n\n\n")) {
		t.Fatalf("%q: badly separated %q", in, text)
	}
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		// Under deep prefixes (quotes, list items) a line keeps 20
		// columns for its words; pre blocks are never wrapped.
		body := strings.TrimLeft(l, " >-0123456789.")
		allowed := max(width, len(l)-len(body)+20)
		if table.Width(l) > allowed && strings.Contains(body, " ") && !strings.Contains(strings.ToLower(in), "<pre") {
			t.Fatalf("%q: line over %d columns: %q", in, allowed, l)
		}
	}
	seen := map[int]bool{}
	for _, m := range refs.FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[1])
		seen[n] = true
	}
	for i := range links {
		if !seen[i+1] {
			t.Fatalf("%q: link [%d] %s is not in the text %q", in, i+1, links[i], text)
		}
	}
}

func FuzzText(f *testing.F) {
	for _, tc := range textCases {
		f.Add(tc.in, 40)
	}
	f.Add(strings.Repeat("<div>", 1000)+"deep", 72)
	f.Add("<ul><li><blockquote><pre>x\ny</pre></blockquote></li></ul>", 10)
	base, _ := url.Parse("https://example.org/post/1")
	f.Fuzz(func(t *testing.T, in string, width int) {
		if width < 0 || width > 500 || len(in) > 1<<16 {
			return
		}
		text, links := Text(in, base, width)
		if width == 0 {
			width = 1 << 30
		}
		checkText(t, in, text, links, max(width, 20))
	})
}
