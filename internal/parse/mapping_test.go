package parse

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// ns declares the namespaces the mapping tests use.
const ns = `xmlns:content="http://purl.org/rss/1.0/modules/content/" xmlns:dc="http://purl.org/dc/elements/1.1/" ` +
	`xmlns:atom="http://www.w3.org/2005/Atom" xmlns:media="http://search.yahoo.com/mrss/" ` +
	`xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd" xmlns:feedburner="http://rssnamespace.org/feedburner/ext/1.0" ` +
	`xmlns:dcterms="http://purl.org/dc/terms/"`

func rss(items ...string) string {
	return `<?xml version="1.0"?><rss version="2.0" ` + ns + `><channel><title>T</title><link>https://example.org/</link>` +
		strings.Join(items, "") + `</channel></rss>`
}

func atomFeed(entries ...string) string {
	return `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom" ` + strings.TrimPrefix(ns, `xmlns:atom="http://www.w3.org/2005/Atom" `) +
		`><title>T</title><id>urn:feed</id><updated>2026-01-01T00:00:00Z</updated>` + strings.Join(entries, "") + `</feed>`
}

func jsonDoc(items string) string {
	return `{"version":"https://jsonfeed.org/version/1.1","title":"J","home_page_url":"https://example.org/","items":[` + items + `]}`
}

// entryJSON is an entry as a map, to compare chosen fields.
func entryJSON(t *testing.T, e *ndjson.Entry) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(marshalLine(t, e)), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMapping checks the mapping rules of docs/parse.md#mapping, one rule
// per case: the fields named in want must come out
// as given (JSON values).
func TestMapping(t *testing.T) {
	src := Source{FeedID: testFeedID, FetchID: testFetchID, BaseURL: "https://example.org/blog/feed.xml"}
	tests := []struct {
		name string
		doc  string
		want map[string]string // field -> JSON
	}{
		// Titles.
		{"rss title trimmed", rss(`<item><title>  A &amp; B  </title></item>`), map[string]string{"title": `"A & B"`}},
		{"atom html title", atomFeed(`<entry><id>1</id><title type="html">A &amp;amp; B</title></entry>`), map[string]string{"title": `"A &amp; B"`}},
		{"atom xhtml title", atomFeed(`<entry><id>1</id><title type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml">A <b>B</b></div></title></entry>`), map[string]string{"title": `"A <b>B</b>"`}},
		{"atom html title with a relative link", atomFeed(`<entry xml:base="https://b.example/x/"><id>1</id><title type="html">&lt;a href="y"&gt;t&lt;/a&gt;</title></entry>`), map[string]string{"title": `"<a href=\"https://b.example/x/y\">t</a>"`}},
		{"media title when no title", atomFeed(`<entry><id>1</id><media:group><media:title>M</media:title></media:group></entry>`), map[string]string{"title": `"M"`}},
		{"dc:title", rss(`<item><dc:title>D</dc:title></item>`), map[string]string{"title": `"D"`}},

		// Links (more in TestEntryLink).
		{"a10:link in rss", `<rss version="2.0" xmlns:a10="http://www.w3.org/2005/Atom"><channel><item><a10:link href="/p/1"/></item></channel></rss>`,
			map[string]string{"canonical_link": `"https://example.org/p/1"`}},
		{"atom prefers text/html", atomFeed(`<entry><id>1</id><link rel="alternate" type="application/pdf" href="/a.pdf"/><link rel="alternate" type="text/html" href="/a.html"/></entry>`),
			map[string]string{"canonical_link": `"https://example.org/a.html"`}},
		{"atom link without rel is alternate", atomFeed(`<entry><id>1</id><link rel="self" href="/self"/><link href="/alt"/></entry>`),
			map[string]string{"canonical_link": `"https://example.org/alt"`}},
		{"xml:base on the entry", atomFeed(`<entry xml:base="https://other.example/x/"><id>1</id><link href="y"/></entry>`),
			map[string]string{"canonical_link": `"https://other.example/x/y"`}},
		{"relative xml:base on the feed and the link", `<feed xmlns="http://www.w3.org/2005/Atom" xml:base="/root/"><entry xml:base="sub/"><id>1</id><link href="p"/></entry></feed>`,
			map[string]string{"canonical_link": `"https://example.org/root/sub/p"`}},
		{"xml:base in rss", `<rss version="2.0"><channel xml:base="https://b.example/base/"><item><link>p/1</link></item></channel></rss>`,
			map[string]string{"canonical_link": `"https://b.example/base/p/1"`}},
		{"tracking parameters removed", rss(`<item><link>https://example.org/p?id=1&amp;utm_source=rss&amp;utm_medium=feed&amp;fbclid=x</link></item>`),
			map[string]string{"canonical_link": `"https://example.org/p?id=1"`}},
		{"json url", jsonDoc(`{"id":"1","url":"/j/1?utm_campaign=x"}`), map[string]string{"canonical_link": `"https://example.org/j/1"`}},
		{"json external_url when no url", jsonDoc(`{"id":"1","external_url":"https://elsewhere.example/x"}`), map[string]string{"canonical_link": `"https://elsewhere.example/x"`}},
		{"atom link with the url as its text", atomFeed(`<entry><id>1</id><link> /t/1 </link></entry>`), map[string]string{"canonical_link": `"https://example.org/t/1"`}},
		{"atom:link in rss with the url as its text", rss(`<item><atom:link rel="alternate">https://example.org/t/2</atom:link></item>`), map[string]string{"canonical_link": `"https://example.org/t/2"`}},

		// Summary and content.
		{"rss description and content:encoded", rss(`<item><description>&lt;b&gt;S&lt;/b&gt;</description><content:encoded><![CDATA[<p>C</p>]]></content:encoded></item>`),
			map[string]string{"summary": `"<b>S</b>"`, "content": `"<p>C</p>"`}},
		{"rss description with unescaped html", rss(`<item><description>a &amp; <b>bold</b> <br/> c</description></item>`),
			map[string]string{"summary": `"a &amp; <b>bold</b> <br/> c"`}},
		{"rss content only", rss(`<item><content:encoded>C</content:encoded></item>`), map[string]string{"summary": `""`, "content": `"C"`}},
		{"itunes summary", rss(`<item><itunes:summary>I</itunes:summary></item>`), map[string]string{"summary": `"I"`}},
		{"atom summary text", atomFeed(`<entry><id>1</id><summary type="text">a &lt; b</summary></entry>`), map[string]string{"summary": `"a < b"`}},
		{"atom summary html", atomFeed(`<entry><id>1</id><summary type="html">&lt;p&gt;a&lt;/p&gt;</summary></entry>`), map[string]string{"summary": `"<p>a</p>"`}},
		{"atom content xhtml without its div", atomFeed(`<entry><id>1</id><content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><p>a &amp; b</p><br/></div></content></entry>`),
			map[string]string{"content": `"<p>a &amp; b</p><br/>"`}},
		{"atom content xhtml with a prefix", atomFeed(`<entry><id>1</id><content type="xhtml"><x:div xmlns:x="http://www.w3.org/1999/xhtml"><x:p>a</x:p></x:div></content></entry>`),
			map[string]string{"content": `"<p>a</p>"`}},
		{"atom 0.3 base64 content", `<feed version="0.3" xmlns="http://purl.org/atom/ns#"><entry><id>1</id><content type="text/html" mode="base64">PHA+aGk8L3A+</content></entry></feed>`,
			map[string]string{"content": `"<p>hi</p>"`}},
		{"atom 0.3 xml content", `<feed version="0.3" xmlns="http://purl.org/atom/ns#"><entry><id>1</id><content type="application/xhtml+xml" mode="xml"><div xmlns="http://www.w3.org/1999/xhtml"><p>x</p></div></content></entry></feed>`,
			map[string]string{"content": `"<p>x</p>"`}},
		{"youtube media:description", atomFeed(`<entry><id>1</id><media:group><media:description>D</media:description></media:group></entry>`),
			map[string]string{"summary": `"D"`}},
		{"json content_html over content_text", jsonDoc(`{"id":"1","content_html":"<p>h</p>","content_text":"t","summary":"s"}`),
			map[string]string{"content": `"<p>h</p>"`, "summary": `"s"`}},
		{"json content_text", jsonDoc(`{"id":"1","content_text":"t"}`), map[string]string{"content": `"t"`}},
		{"rss body without namespace", rss(`<item><body><p>B <a href="b">b</a></p></body></item>`), map[string]string{"content": `"<p>B <a href=\"https://example.org/blog/b\">b</a></p>"`}},
		{"rss fullitem", rss(`<item><fullitem>&lt;p&gt;F &lt;img src="f.png"&gt;&lt;/p&gt;</fullitem></item>`), map[string]string{"content": `"<p>F <img src=\"https://example.org/blog/f.png\"></p>"`}},
		{"content:encoded over fullitem", rss(`<item><fullitem>F</fullitem><content:encoded>C</content:encoded></item>`), map[string]string{"content": `"C"`}},

		// Atom content of other media types: base64 (RFC 4287 §4.1.3.3).
		{"atom base64 content of a text-like type", atomFeed(`<entry><id>1</id><content type="application/json">eyJhIjogMX0=</content></entry>`), map[string]string{"content": `"{\"a\": 1}"`}},
		{"atom base64 content across lines", atomFeed("<entry><id>1</id><content type=\"application/octet-stream\">\n  aGVsbG8g\n  d29ybGQ=\n</content></entry>"), map[string]string{"content": `"hello world"`}},
		{"atom base64 content that is an image is dropped", atomFeed(`<entry><id>1</id><content type="image/png">iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==</content></entry>`), map[string]string{"content": `""`}},
		{"atom content of another type that is not base64 is kept", atomFeed(`<entry><id>1</id><content type="application/x-note">not base64!</content></entry>`), map[string]string{"content": `"not base64!"`}},
		{"atom text/plain content is text, not base64", atomFeed(`<entry><id>1</id><content type="text/plain">SGVsbG8=</content></entry>`), map[string]string{"content": `"SGVsbG8="`}},
		{"atom xml content is not base64", atomFeed(`<entry><id>1</id><content type="image/svg+xml"><svg xmlns="http://www.w3.org/2000/svg"/></content></entry>`), map[string]string{"content": `"<svg xmlns=\"http://www.w3.org/2000/svg\"/>"`}},
		{"atom 0.3 base64 title", `<feed version="0.3" xmlns="http://purl.org/atom/ns#"><entry><id>1</id><title mode="base64">VGl0bGU=</title></entry></feed>`, map[string]string{"title": `"Title"`}},
		{"atom 0.3 content of a media type is not base64", `<feed version="0.3" xmlns="http://purl.org/atom/ns#"><entry><id>1</id><content type="application/x-note">x</content></entry></feed>`, map[string]string{"content": `"x"`}},

		// Namespaced markup in xhtml: a browser must read it, an XML parser too.
		{"svg with a prefix declared on the div", atomFeed(`<entry><id>1</id><content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml" xmlns:svg="http://www.w3.org/2000/svg"><p>a</p><svg:svg width="10"><svg:circle r="4"/></svg:svg></div></content></entry>`),
			map[string]string{"content": `"<p>a</p><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\"><circle r=\"4\"/></svg>"`}},
		{"mathml with a prefix declared on the feed", `<feed xmlns="http://www.w3.org/2005/Atom" xmlns:m="http://www.w3.org/1998/Math/MathML"><entry><id>1</id><content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><m:math><m:mi>x</m:mi></m:math></div></content></entry></feed>`,
			map[string]string{"content": `"<math xmlns=\"http://www.w3.org/1998/Math/MathML\"><mi>x</mi></math>"`}},
		{"svg with xlink declared on the feed", `<feed xmlns="http://www.w3.org/2005/Atom" xmlns:xlink="http://www.w3.org/1999/xlink"><entry><id>1</id><content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><svg xmlns="http://www.w3.org/2000/svg"><use xlink:href="#a"/></svg></div></content></entry></feed>`,
			map[string]string{"content": `"<svg xmlns=\"http://www.w3.org/2000/svg\"><use xmlns:xlink=\"http://www.w3.org/1999/xlink\" xlink:href=\"#a\"/></svg>"`}},
		{"xhtml inside svg gets its namespace back", atomFeed(`<entry><id>1</id><content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><svg xmlns="http://www.w3.org/2000/svg"><foreignObject><p xmlns="http://www.w3.org/1999/xhtml">t</p></foreignObject></svg></div></content></entry>`),
			map[string]string{"content": `"<svg xmlns=\"http://www.w3.org/2000/svg\"><foreignObject><p xmlns=\"http://www.w3.org/1999/xhtml\">t</p></foreignObject></svg>"`}},
		{"another namespace declared outside is declared again", `<feed xmlns="http://www.w3.org/2005/Atom" xmlns:ex="urn:ex"><entry><id>1</id><content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><ex:note ex:n="1">n</ex:note></div></content></entry></feed>`,
			map[string]string{"content": `"<ex:note xmlns:ex=\"urn:ex\" ex:n=\"1\">n</ex:note>"`}},
		{"an undeclared prefix is dropped", atomFeed(`<entry><id>1</id><content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><foo:b foo:x="1" x="2">b</foo:b></div></content></entry>`),
			map[string]string{"content": `"<b x=\"2\">b</b>"`}},

		// Markup clean-up.
		{"a bare <! is escaped", rss(`<item><description>&lt;p&gt;a &lt;!x&gt; &lt;!-- c --&gt; &lt;a href="/r"&gt;r&lt;/a&gt; &lt;!</description></item>`),
			map[string]string{"summary": `"<p>a &lt;!x> <!-- c --> <a href=\"https://example.org/r\">r</a> &lt;!"`}},
		{"a bare <! is escaped without relative urls too", rss(`<item><description>&lt;!ELEMENT x&gt; y</description></item>`), map[string]string{"summary": `"&lt;!ELEMENT x> y"`}},
		{"urls with white space around them are trimmed", rss(`<item><description>&lt;a href=" /a "&gt;a&lt;/a&gt; &lt;img src="https://x.example/i.png  "&gt;</description></item>`),
			map[string]string{"summary": `"<a href=\"https://example.org/a\">a</a> <img src=\"https://x.example/i.png\">"`}},
		{"urls with white space in xhtml", atomFeed(`<entry><id>1</id><content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><a href="  b/c ">c</a></div></content></entry>`),
			map[string]string{"content": `"<a href=\"https://example.org/blog/b/c\">c</a>"`}},
		{"upper-case X in a character reference", rss(`<item><title>&#X41;&#x42;&#67;</title></item>`), map[string]string{"title": `"ABC"`}},

		// Relative URLs inside HTML content.
		{"relative urls in a description", rss(`<item><description>&lt;a href="/a"&gt;a&lt;/a&gt; &lt;img src='i.png'&gt; &lt;a href="#n"&gt;n&lt;/a&gt; &lt;a href="https://x.example/"&gt;x&lt;/a&gt;</description></item>`),
			map[string]string{"summary": `"<a href=\"https://example.org/a\">a</a> <img src=\"https://example.org/blog/i.png\"> <a href=\"#n\">n</a> <a href=\"https://x.example/\">x</a>"`}},
		{"relative urls in content:encoded against xml:base", rss(`<item xml:base="https://cdn.example/p/"><content:encoded><![CDATA[<p><a href="x?a=1&amp;b=2">x</a></p>]]></content:encoded></item>`),
			map[string]string{"content": `"<p><a href=\"https://cdn.example/p/x?a=1&amp;b=2\">x</a></p>"`}},
		{"text is not html", atomFeed(`<entry><id>1</id><summary type="text">see &lt;a href="/x"&gt;</summary></entry>`),
			map[string]string{"summary": `"see <a href=\"/x\">"`}},
		{"json content_html", jsonDoc(`{"id":"1","content_html":"<img src=\"i.png\">"}`),
			map[string]string{"content": `"<img src=\"https://example.org/blog/i.png\">"`}},

		// Authors.
		{"rss author email (Name)", rss(`<item><author>jo@example.org (Jo Doe)</author></item>`),
			map[string]string{"authors": `[{"name":"Jo Doe","email":"jo@example.org","uri":""}]`}},
		{"rss author Name <email>", rss(`<item><author>Jo Doe &lt;jo@example.org&gt;</author></item>`),
			map[string]string{"authors": `[{"name":"Jo Doe","email":"jo@example.org","uri":""}]`}},
		{"rss author email only", rss(`<item><author>jo@example.org</author></item>`),
			map[string]string{"authors": `[{"name":"","email":"jo@example.org","uri":""}]`}},
		{"dc:creator list", rss(`<item><dc:creator>A, B and C</dc:creator></item>`),
			map[string]string{"authors": `[{"name":"A","email":"","uri":""},{"name":"B","email":"","uri":""},{"name":"C","email":"","uri":""}]`}},
		{"dc:creator oxford comma", rss(`<item><dc:creator>Ann Lee, Bo Chen, and Cy Ng</dc:creator></item>`),
			map[string]string{"authors": `[{"name":"Ann Lee","email":"","uri":""},{"name":"Bo Chen","email":"","uri":""},{"name":"Cy Ng","email":"","uri":""}]`}},
		{"dc:creator two full names", rss(`<item><dc:creator>Ann Lee and Bo Chen</dc:creator></item>`),
			map[string]string{"authors": `[{"name":"Ann Lee","email":"","uri":""},{"name":"Bo Chen","email":"","uri":""}]`}},
		{"dc:creator one band", rss(`<item><dc:creator>Simon &amp; Garfunkel</dc:creator></item>`),
			map[string]string{"authors": `[{"name":"Simon & Garfunkel","email":"","uri":""}]`}},
		{"dc:creator last, first", rss(`<item><dc:creator>Doe, John</dc:creator></item>`),
			map[string]string{"authors": `[{"name":"Doe, John","email":"","uri":""}]`}},
		{"dc:creator semicolons", rss(`<item><dc:creator>A; B</dc:creator></item>`),
			map[string]string{"authors": `[{"name":"A","email":"","uri":""},{"name":"B","email":"","uri":""}]`}},
		{"several dc:creator and the same person twice", rss(`<item><author>a@example.org (A)</author><dc:creator>A</dc:creator><dc:creator>B</dc:creator></item>`),
			map[string]string{"authors": `[{"name":"A","email":"a@example.org","uri":""},{"name":"B","email":"","uri":""}]`}},
		{"itunes author when no other", rss(`<item><itunes:author>Pod Caster</itunes:author></item>`),
			map[string]string{"authors": `[{"name":"Pod Caster","email":"","uri":""}]`}},
		{"atom 0.3 author homepage", `<feed version="0.3" xmlns="http://purl.org/atom/ns#"><entry><id>1</id><author><name>N</name><homepage>http://n.example/</homepage></author></entry></feed>`,
			map[string]string{"authors": `[{"name":"N","email":"","uri":"http://n.example/"}]`}},
		{"atom author with uri", atomFeed(`<entry><id>1</id><author><name>N</name><email>n@example.org</email><uri>/n</uri></author></entry>`),
			map[string]string{"authors": `[{"name":"N","email":"n@example.org","uri":"https://example.org/n"}]`}},
		{"atom entry inherits the feed author", `<feed xmlns="http://www.w3.org/2005/Atom"><author><name>F</name></author><entry><id>1</id></entry></feed>`,
			map[string]string{"authors": `[{"name":"F","email":"","uri":""}]`}},
		{"atom source author is not the entry's", `<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>1</id><source><author><name>S</name></author></source></entry></feed>`,
			map[string]string{"authors": `[]`}},
		{"a10:author in rss", `<rss version="2.0" xmlns:a10="http://www.w3.org/2005/Atom"><channel><item><a10:author><a10:name>N</a10:name><a10:uri>http://x.example/</a10:uri></a10:author></item></channel></rss>`,
			map[string]string{"authors": `[{"name":"N","email":"","uri":"http://x.example/"}]`}},
		{"json authors", jsonDoc(`{"id":"1","authors":[{"name":"A","url":"https://a.example"}]}`),
			map[string]string{"authors": `[{"name":"A","email":"","uri":"https://a.example/"}]`}},
		{"json 1.0 author", `{"version":"https://jsonfeed.org/version/1","items":[{"id":"1","author":{"name":"A"}}]}`,
			map[string]string{"authors": `[{"name":"A","email":"","uri":""}]`}},
		{"json item inherits the feed authors", `{"version":"https://jsonfeed.org/version/1.1","authors":[{"name":"F"}],"items":[{"id":"1"}]}`,
			map[string]string{"authors": `[{"name":"F","email":"","uri":""}]`}},

		// Categories.
		{"rss categories, repeats dropped", rss(`<item><category>a</category><category domain="x"> b </category><category>a</category><dc:subject>c</dc:subject></item>`),
			map[string]string{"categories": `["a","b","c"]`}},
		{"atom term, else label", atomFeed(`<entry><id>1</id><category term="t" label="L"/><category label="only label"/></entry>`),
			map[string]string{"categories": `["t","only label"]`}},
		{"itunes keywords", rss(`<item><itunes:keywords>x, y ,z</itunes:keywords></item>`), map[string]string{"categories": `["x","y","z"]`}},
		{"json tags", jsonDoc(`{"id":"1","tags":["a","b"]}`), map[string]string{"categories": `["a","b"]`}},

		// Enclosures.
		{"rss enclosure", rss(`<item><enclosure url="/e.mp3" length="123" type="audio/mpeg"/></item>`),
			map[string]string{"enclosures": `[{"url":"https://example.org/e.mp3","type":"audio/mpeg","length":123}]`}},
		{"atom rel=enclosure", atomFeed(`<entry><id>1</id><link rel="enclosure" href="https://example.org/e.mp3" type="audio/mpeg" length="5"/></entry>`),
			map[string]string{"enclosures": `[{"url":"https://example.org/e.mp3","type":"audio/mpeg","length":5}]`}},
		{"media content and thumbnail", rss(`<item><media:content url="https://example.org/v.mp4" type="video/mp4" fileSize="9"><media:thumbnail url="https://example.org/t.jpg"/></media:content></item>`),
			map[string]string{"enclosures": `[{"url":"https://example.org/v.mp4","type":"video/mp4","length":9},{"url":"https://example.org/t.jpg","type":"image/jpeg","length":0}]`}},
		{"media group", atomFeed(`<entry><id>1</id><media:group><media:content url="https://example.org/v" medium="image"/><media:thumbnail url="https://example.org/t.png?s=1"/></media:group></entry>`),
			map[string]string{"enclosures": `[{"url":"https://example.org/v","type":"","length":0},{"url":"https://example.org/t.png?s=1","type":"image/png","length":0}]`}},
		{"itunes image", rss(`<item><itunes:image href="https://example.org/cover.jpg"/></item>`),
			map[string]string{"enclosures": `[{"url":"https://example.org/cover.jpg","type":"image/jpeg","length":0}]`}},
		{"the same url once, completed", rss(`<item><media:content url="https://example.org/e.mp3"/><enclosure url="https://example.org/e.mp3" type="audio/mpeg" length="7"/></item>`),
			map[string]string{"enclosures": `[{"url":"https://example.org/e.mp3","type":"audio/mpeg","length":7}]`}},
		{"bad lengths are 0", rss(`<item><enclosure url="/a" length="-4"/><enclosure url="/b" length="lots"/></item>`),
			map[string]string{"enclosures": `[{"url":"https://example.org/a","type":"","length":0},{"url":"https://example.org/b","type":"","length":0}]`}},
		{"json attachments and image", jsonDoc(`{"id":"1","image":"/i.png","attachments":[{"url":"/a.mp3","mime_type":"audio/mpeg","size_in_bytes":12.0}]}`),
			map[string]string{"enclosures": `[{"url":"https://example.org/a.mp3","type":"audio/mpeg","length":12},{"url":"https://example.org/i.png","type":"image/png","length":0}]`}},

		// Dates.
		{"pubDate", rss(`<item><pubDate>Sat, 21 Nov 2026 07:00:00 +0100</pubDate></item>`), map[string]string{"published": `"2026-11-21T06:00:00Z"`, "updated": `null`}},
		{"dc:date when no pubDate", rss(`<item><dc:date>2026-11-21T07:00:00+01:00</dc:date></item>`), map[string]string{"published": `"2026-11-21T06:00:00Z"`}},
		{"a bad pubDate, then dc:date", rss(`<item><pubDate>soon</pubDate><dc:date>2026-11-21</dc:date></item>`), map[string]string{"published": `"2026-11-21T00:00:00Z"`}},
		{"pubDate over an earlier dc:date", rss(`<item><dc:date>2026-11-20</dc:date><pubDate>Sat, 21 Nov 2026 00:00:00 GMT</pubDate></item>`), map[string]string{"published": `"2026-11-21T00:00:00Z"`}},
		{"atom published over an earlier dc:date", atomFeed(`<entry><id>1</id><dc:date>2026-11-20</dc:date><published>2026-11-21T00:00:00Z</published></entry>`), map[string]string{"published": `"2026-11-21T00:00:00Z"`}},
		{"unreadable date is null", rss(`<item><pubDate>the day after tomorrow</pubDate></item>`), map[string]string{"published": `null`}},
		{"atom updated and published", atomFeed(`<entry><id>1</id><published>2026-01-01T00:00:00Z</published><updated>2026-02-01T00:00:00+02:00</updated></entry>`),
			map[string]string{"published": `"2026-01-01T00:00:00Z"`, "updated": `"2026-01-31T22:00:00Z"`}},
		{"atom published falls back to updated", atomFeed(`<entry><id>1</id><updated>2026-02-01T00:00:00Z</updated></entry>`),
			map[string]string{"published": `"2026-02-01T00:00:00Z"`, "updated": `"2026-02-01T00:00:00Z"`}},
		{"atom 0.3 issued and modified", `<feed version="0.3" xmlns="http://purl.org/atom/ns#"><entry><id>1</id><issued>2004-01-01T00:00:00Z</issued><modified>2004-01-02T00:00:00Z</modified></entry></feed>`,
			map[string]string{"published": `"2004-01-01T00:00:00Z"`, "updated": `"2004-01-02T00:00:00Z"`}},
		{"atom:updated in rss", rss(`<item><atom:updated>2026-03-01T00:00:00Z</atom:updated></item>`), map[string]string{"updated": `"2026-03-01T00:00:00Z"`}},
		{"dcterms:modified", rss(`<item><dcterms:modified>2026-03-01</dcterms:modified></item>`), map[string]string{"updated": `"2026-03-01T00:00:00Z"`}},
		{"json dates", jsonDoc(`{"id":"1","date_published":"2026-01-01T10:00:00+02:00","date_modified":"2026-01-02T00:00:00Z"}`),
			map[string]string{"published": `"2026-01-01T08:00:00Z"`, "updated": `"2026-01-02T00:00:00Z"`}},

		// Native ids.
		{"atom id as written", atomFeed(`<entry><id> tag:example.org,2026:a[1]^x y </id></entry>`), map[string]string{"native_id": `"tag:example.org,2026:a[1]^x y"`}},
		{"rdf:about", `<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"><item rdf:about="https://example.org/r/1"><title>r</title><link>https://example.org/r/1</link></item></rdf:RDF>`,
			map[string]string{"native_id": `"https://example.org/r/1"`}},
		{"json numeric id", jsonDoc(`{"id":42}`), map[string]string{"native_id": `"42"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			feed := mustParse(t, []byte(tt.doc), src)
			if len(feed.Entries) != 1 {
				t.Fatalf("%d entries, want 1", len(feed.Entries))
			}
			got := entryJSON(t, &feed.Entries[0])
			for field, want := range tt.want {
				if b := got[field]; string(b) != want {
					t.Errorf("%s = %s, want %s", field, b, want)
				}
			}
			checkResult(t, feed, nil, src)
		})
	}
}

// TestFeedLevel checks the facts of the feed itself.
func TestFeedLevel(t *testing.T) {
	src := Source{FeedID: testFeedID, BaseURL: "https://example.org/feed.xml"}
	tests := []struct {
		name string
		doc  string
		want ndjson.Parse // the fields compared; lists nil mean []
	}{
		{"rss 2.0", `<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel>
			<title>T</title><link>/home</link><description>D</description><language>en</language><ttl>30</ttl>
			<managingEditor>ed@example.org (Ed)</managingEditor>
			<image><url>/logo.png</url><title>T</title><link>/</link></image>
			<atom:link rel="self" href="https://example.org/feed.xml"/><atom:link rel="hub" href="https://hub.example/"/><atom:link rel="hub" href="https://hub2.example/"/>
			<atom:link rel="prev-archive" href="/2025.xml"/><atom:link rel="next-archive" href="/2027.xml"/><atom:link rel="current" href="/feed.xml"/><atom:link rel="next" href="/feed.xml?page=2"/>
			<skipHours><hour>1</hour><hour>2</hour></skipHours><skipDays><day>Sunday</day></skipDays></channel></rss>`,
			ndjson.Parse{Format: "rss", Version: "2.0", Charset: "utf-8", Title: "T", Link: "https://example.org/home", Description: "D", Language: "en", TTLMinutes: 30,
				Image: "https://example.org/logo.png", Publisher: "T", Self: "https://example.org/feed.xml", Hubs: []string{"https://hub.example/", "https://hub2.example/"},
				PrevArchive: "https://example.org/2025.xml", NextArchive: "https://example.org/2027.xml", Current: "https://example.org/feed.xml", Next: "https://example.org/feed.xml?page=2",
				SkipHours: []int{1, 2}, SkipDays: []string{"Sunday"}}},
		{"rss publisher from dc:publisher", `<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><title>T</title><dc:publisher>P Inc.</dc:publisher><dc:language>fr</dc:language></channel></rss>`,
			ndjson.Parse{Format: "rss", Version: "2.0", Charset: "utf-8", Title: "T", Publisher: "P Inc.", Language: "fr"}},
		{"rss publisher from managingEditor", `<rss version="0.91"><channel><managingEditor>ed@example.org (Ed Itor)</managingEditor></channel></rss>`,
			ndjson.Parse{Format: "rss", Version: "0.91", Charset: "utf-8", Publisher: "Ed Itor"}},
		{"itunes image and summary", `<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"><channel><itunes:image href="https://example.org/cover.jpg"/><itunes:summary>S</itunes:summary></channel></rss>`,
			ndjson.Parse{Format: "rss", Version: "2.0", Charset: "utf-8", Image: "https://example.org/cover.jpg", Description: "S"}},
		{"atom", `<feed xmlns="http://www.w3.org/2005/Atom" xml:lang="de"><title>A</title><subtitle>S</subtitle><icon>/i.ico</icon><logo>/l.png</logo>
			<link href="/"/><link rel="self" href="/feed.atom"/><link rel="hub" href="https://hub.example/"/><author><name>Au</name></author></feed>`,
			ndjson.Parse{Format: "atom", Version: "1.0", Charset: "utf-8", Title: "A", Description: "S", Language: "de", Link: "https://example.org/",
				Image: "https://example.org/l.png", Publisher: "A", Self: "https://example.org/feed.atom", Hubs: []string{"https://hub.example/"}}},
		{"atom publisher from author", `<feed xmlns="http://www.w3.org/2005/Atom"><author><name>Au</name></author></feed>`,
			ndjson.Parse{Format: "atom", Version: "1.0", Charset: "utf-8", Publisher: "Au"}},
		{"atom 0.3", `<feed version="0.3" xmlns="http://purl.org/atom/ns#"><title>A</title><tagline>TL</tagline></feed>`,
			ndjson.Parse{Format: "atom", Version: "0.3", Charset: "utf-8", Title: "A", Description: "TL", Publisher: "A"}},
		{"rss 0.90", `<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://my.netscape.com/rdf/simple/0.9/"><channel><title>N</title><link>http://n.example/</link></channel><image><url>http://n.example/i.gif</url></image></rdf:RDF>`,
			ndjson.Parse{Format: "rss", Version: "0.90", Charset: "utf-8", Title: "N", Link: "http://n.example/", Image: "http://n.example/i.gif", Publisher: "N"}},
		{"rss 1.1", `<Channel xmlns="http://purl.org/net/rss1.1#" xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><title>O</title><items rdf:parseType="Collection"><item><title>i</title></item></items></Channel>`,
			ndjson.Parse{Format: "rss", Version: "1.1", Charset: "utf-8", Title: "O", Publisher: "O", Items: 1}},
		{"json feed 1.0", `{"version":"https://jsonfeed.org/version/1","title":"J","home_page_url":"https://example.org/","feed_url":"https://example.org/feed.json","description":"D","favicon":"/f.ico","hubs":[{"type":"WebSub","url":"https://hub.example/"}],"next_url":"feed.json?page=2","items":[]}`,
			ndjson.Parse{Format: "json", Version: "1.0", Charset: "utf-8", Title: "J", Link: "https://example.org/", Self: "https://example.org/feed.json", Next: "https://example.org/feed.json?page=2", Description: "D",
				Image: "https://example.org/f.ico", Publisher: "J", Hubs: []string{"https://hub.example/"}}},
		{"json feed 1.1", `{"version":"https://jsonfeed.org/version/1.1","language":"en-GB","icon":"https://example.org/i.png","items":[]}`,
			ndjson.Parse{Format: "json", Version: "1.1", Charset: "utf-8", Language: "en-GB", Image: "https://example.org/i.png"}},
		{"channel dc:title when no title", `<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><dc:title>DC</dc:title></channel></rss>`,
			ndjson.Parse{Format: "rss", Version: "2.0", Charset: "utf-8", Title: "DC", Publisher: "DC"}},
		{"channel title over dc:title", `<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><dc:title>DC</dc:title><title>T</title></channel></rss>`,
			ndjson.Parse{Format: "rss", Version: "2.0", Charset: "utf-8", Title: "T", Publisher: "T"}},
		{"atom html and xhtml texts with relative urls", `<feed xmlns="http://www.w3.org/2005/Atom" xml:base="/b/"><title type="html">&lt;a href=" x "&gt;T&lt;/a&gt;</title>` +
			`<subtitle type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml">S <img src="s.png"/></div></subtitle></feed>`,
			ndjson.Parse{Format: "atom", Version: "1.0", Charset: "utf-8", Title: `<a href="https://example.org/b/x">T</a>`, Description: `S <img src="https://example.org/b/s.png"/>`,
				Publisher: `<a href="https://example.org/b/x">T</a>`}},
		{"atom text title is not html", `<feed xmlns="http://www.w3.org/2005/Atom"><title>&lt;a href="x"&gt;</title></feed>`,
			ndjson.Parse{Format: "atom", Version: "1.0", Charset: "utf-8", Title: `<a href="x">`, Publisher: `<a href="x">`}},
		{"atom 0.3 base64 title and tagline", `<feed version="0.3" xmlns="http://purl.org/atom/ns#"><title mode="base64">VA==</title><tagline mode="base64" type="text/html">PGI+VEw8L2I+</tagline></feed>`,
			ndjson.Parse{Format: "atom", Version: "0.3", Charset: "utf-8", Title: "T", Description: "<b>TL</b>", Publisher: "T"}},
		{"atom feed link with the url as its text", `<feed xmlns="http://www.w3.org/2005/Atom"><link>/home</link></feed>`,
			ndjson.Parse{Format: "atom", Version: "1.0", Charset: "utf-8", Link: "https://example.org/home"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			feed := mustParse(t, []byte(tt.doc), src)
			got := feed.Info
			want := tt.want
			if want.SkipHours == nil {
				want.SkipHours = []int{}
			}
			for _, l := range []*[]string{&want.SkipDays, &want.Hubs, &want.Warnings} {
				if *l == nil {
					*l = []string{}
				}
			}
			got.Warnings = []string{}
			if a, b := marshalLine(t, got), marshalLine(t, want); a != b {
				t.Errorf("parse section:\n got %s want %s", a, b)
			}
		})
	}
}

// TestWarnings checks that what a parse recovers from is reported, and
// never made up: dates that cannot be read are null, future dates kept.
func TestWarnings(t *testing.T) {
	now := time.Date(2026, 11, 21, 8, 30, 0, 0, time.UTC)
	src := Source{FeedID: testFeedID, BaseURL: "https://example.org/feed.xml", Now: now}
	doc := rss(
		`<item><title>a</title><pubDate>not a date</pubDate></item>`,
		`<item><title>b</title><pubDate>32 Foo 2026</pubDate></item>`,
		`<item><title>c</title><pubDate>Sat, 21 Nov 2026 08:34:00 GMT</pubDate></item>`, // within the slack
		`<item><title>d</title><pubDate>Sat, 21 Nov 2026 12:00:00 GMT</pubDate></item>`, // hours ahead
		`<item><title>e</title><pubDate>Sun, 01 Jan 2040 00:00:00 GMT</pubDate></item>`,
	)
	feed := mustParse(t, []byte(doc), src)
	var pub []string
	for _, e := range feed.Entries {
		pub = append(pub, e.Published.String())
	}
	if want := []string{"", "", "2026-11-21T08:34:00Z", "2026-11-21T12:00:00Z", "2040-01-01T00:00:00Z"}; !slices.Equal(pub, want) {
		t.Errorf("published = %q, want %q", pub, want)
	}
	w := strings.Join(feed.Info.Warnings, "\n")
	for _, want := range []string{`2 dates that cannot be read, left empty; the first: pubDate "not a date" of item 1`,
		`2 dates in the future, kept; the first: pubDate "Sat, 21 Nov 2026 12:00:00 GMT" of item 4`} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
	// Without a clock nothing is in the future.
	feed = mustParse(t, []byte(doc), Source{FeedID: testFeedID})
	if w := strings.Join(feed.Info.Warnings, "\n"); strings.Contains(w, "future") {
		t.Errorf("future dates flagged without a clock: %s", w)
	}
}

// TestTrackingPolicy checks that the policy is the Parser's: off, the
// default, or extended.
func TestTrackingPolicy(t *testing.T) {
	doc := []byte(rss(`<item><link>https://example.org/p?utm_source=x&amp;ref=feed&amp;id=1</link></item>`))
	src := testSource("t.xml")
	tests := []struct {
		name string
		p    *Parser
		want string
	}{
		{"default", DefaultParser, "https://example.org/p?ref=feed&id=1"},
		{"off", &Parser{}, "https://example.org/p?utm_source=x&ref=feed&id=1"},
		{"extended", &Parser{Tracking: newTracking("utm_*", "ref")}, "https://example.org/p?id=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			feed, err := tt.p.Parse(doc, src)
			if err != nil {
				t.Fatal(err)
			}
			if got := feed.Entries[0].CanonicalLink; got != tt.want {
				t.Errorf("canonical_link = %q, want %q", got, tt.want)
			}
		})
	}
}

func newTracking(params ...string) *urlnorm.Tracking { return urlnorm.NewTracking(params) }

// resolveHTMLTests are HTML fragments and what resolveHTML makes of them
// against https://example.org/dir/page; they also seed FuzzResolveHTML.
var resolveHTMLTests = []struct{ in, want string }{
	{``, ``},
	{`plain text = not html`, `plain text = not html`},
	{`<a href="https://a.example/">a</a>`, `<a href="https://a.example/">a</a>`},
	{`<a href="x">x</a>`, `<a href="https://example.org/dir/x">x</a>`},
	{`<A HREF=x>x</A>`, `<a href="https://example.org/dir/x">x</A>`},
	{`<img alt="a=b" src = '../i.png' />`, `<img alt="a=b" src="https://example.org/i.png"/>`},
	{`<a href="mailto:a@example.org">m</a><a href="#top">t</a><a href="data:,x">d</a>`, `<a href="mailto:a@example.org">m</a><a href="#top">t</a><a href="data:,x">d</a>`},
	{`<video poster="p.jpg" src="//cdn.example/v.mp4"></video>`, `<video poster="https://example.org/dir/p.jpg" src="https://cdn.example/v.mp4"></video>`},
	{`<blockquote cite="/q">q</blockquote> text href=x`, `<blockquote cite="https://example.org/q">q</blockquote> text href=x`},
	{`<a href="a b&amp;c">`, `<a href="https://example.org/dir/a%20b&amp;c">`},
	{`<p title="x" data-href="y">p</p>`, `<p title="x" data-href="y">p</p>`},
	{`<a href="x">unclosed`, `<a href="https://example.org/dir/x">unclosed`},
	{`<p class=x>a <IMG SRC="i.png" Alt='it&#39;s &amp; "q"'/> b</p>`, `<p class=x>a <img src="https://example.org/dir/i.png" alt="it&#39;s &amp; &#34;q&#34;"/> b</p>`},
	{`<a href="x" title="&copy;">`, `<a href="https://example.org/dir/x" title="©">`},
	{`<script>var a = '<a href="x">'</script><a href="y">`, `<script>var a = '<a href="x">'</script><a href="https://example.org/dir/y">`},
	{"<a href=\"x\" data\nx=1>\r\n", "<a href=\"https://example.org/dir/x\" data=\"\" x=\"1\">\r\n"},
	{`a < b <3 <a  href="x"  disabled>`, `a < b <3 <a href="https://example.org/dir/x" disabled="">`},
	{`<a href="x"></a b><br/ ><!-- <a href="y"> -->`, `<a href="https://example.org/dir/x"></a b><br/ ><!-- <a href="y"> -->`},
	{`<A HREF="x" href="/y" A a>`, `<a href="https://example.org/dir/x" a="">`}, // the first of the same name
}

func TestResolveHTML(t *testing.T) {
	base, _ := url.Parse("https://example.org/dir/page")
	for _, tt := range resolveHTMLTests {
		if got := resolveHTML(tt.in, base); got != tt.want {
			t.Errorf("resolveHTML(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := resolveHTML(`<a href="x">`, nil); got != `<a href="x">` {
		t.Errorf("without a base: %q", got)
	}
}

// FuzzResolveHTML holds resolvePlainHTML, where it takes the HTML, to
// the tokenizer's reading (resolveHTMLTokens).
func FuzzResolveHTML(f *testing.F) {
	for _, tt := range resolveHTMLTests {
		f.Add(tt.in)
	}
	base, _ := url.Parse("https://example.org/dir/page")
	f.Fuzz(func(t *testing.T, s string) {
		fast, ok := resolvePlainHTML(s, base)
		if !ok {
			return
		}
		if slow := resolveHTMLTokens(s, base); fast != slow {
			t.Errorf("%q:\n plain:     %q\n tokenizer: %q", s, fast, slow)
		}
	})
}

// FuzzPlainURL holds plainURL and plainNormal to urlnorm: a URL plainURL
// takes is normalized as written, one plainNormal takes as it says, and
// its key is that without the scheme.
func FuzzPlainURL(f *testing.F) {
	for _, s := range []string{"https://example.org/a/b?c=d&e", "http://x.example/", "https://Example.org/", "https://x.example", "https://x.example/?",
		"https://x.example/a#f", "https://x.example:443/", "https://x.example./a", "https://x.example/a%20b", "https://x.example/a b", "https://a-b.c/~d/e;f=g@h",
		"https://x.example/caf\u00e9/?q=1", "https://x.example/\xff\xfe", "https://x.example/\u30cb?\u00e9", "https://x.\u00e9xample/a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// The adapter gives ids.EntryUID an id's key for the id, which
		// it keys again.
		if k := urlnorm.Key(s); urlnorm.Key(k) != k || (k == "") != (strings.TrimSpace(s) == "") {
			t.Errorf("urlnorm.Key(%q) = %q, but its key is %q", s, k, urlnorm.Key(k))
		}
		// The adapter's shortcut: without a fragment, Key is the
		// normalized URL without its scheme.
		if isHTTP(s) && !strings.Contains(s, "#") {
			if n, err := urlnorm.Normalize(s); err == nil && urlnorm.Key(s) != n[strings.IndexByte(n, ':')+1:] {
				t.Errorf("urlnorm.Key(%q) = %q, but Normalize gives %q", s, urlnorm.Key(s), n)
			}
		}
		if p, ok := plainNormal(s); ok {
			if n, err := urlnorm.Normalize(s); err != nil || n != p {
				t.Errorf("plainNormal(%q) = %q, but urlnorm.Normalize gives %q, %v", s, p, n, err)
			}
			if k := urlnorm.Key(s); k != p[strings.IndexByte(p, ':')+1:] {
				t.Errorf("plainNormal(%q) = %q, but urlnorm.Key gives %q", s, p, k)
			}
		}
		if !plainURL(s) {
			return
		}
		if n, err := urlnorm.Normalize(s); err != nil || n != s {
			t.Errorf("plainURL(%q), but urlnorm.Normalize gives %q, %v", s, n, err)
		}
		if k := urlnorm.Key(s); k != s[strings.IndexByte(s, ':')+1:] {
			t.Errorf("plainURL(%q), but urlnorm.Key gives %q", s, k)
		}
	})
}

func TestPlainURL(t *testing.T) {
	for s, want := range map[string]bool{
		"https://example.org/a/b?c=d&e": true, "http://x.example/": true, "https://a-b.c/~d/e;f=g@h": true,
		"https://Example.org/": false, "https://x.example": false, "https://x.example/?": false, "https://x.example/a#f": false,
		"https://x.example:443/": false, "https://x.example./a": false, "https://x.example/a%20b": false, "ftp://x.example/": false,
	} {
		if got := plainURL(s); got != want {
			t.Errorf("plainURL(%q) = %v, want %v", s, got, want)
		}
	}
	for s, want := range map[string]string{
		"https://x.example/caf\u00e9/?q=\u00e9": "", "https://x.example/caf\u00e9/?q=1": "https://x.example/caf%C3%A9/?q=1",
		"https://x.example/a/b": "https://x.example/a/b", "https://X.example/\u00e9": "", "https://x.example/\u00e9 b": "",
	} {
		if got, ok := plainNormal(s); got != want || ok != (want != "") {
			t.Errorf("plainNormal(%q) = %q, %v, want %q", s, got, ok, want)
		}
	}
}

// FuzzResolveRef holds resolveRef's shortcut for paths from the root to
// net/url's resolution.
func FuzzResolveRef(f *testing.F) {
	for _, s := range []string{"/a/b.jpg", "/a/./b", "/a/../b", "/.", "/..", "/a/.b", "/a/b/", "//x/y", "/a//b", "/a?b", "/a#b", "/%41"} {
		f.Add(s, "https://example.org/dir/page")
	}
	f.Add("/x", "http://a-b.example.com")
	f.Fuzz(func(t *testing.T, ref, baseURL string) {
		base, err := url.Parse(baseURL)
		if err != nil || !plainAbsolutePath(ref) || !plainBase(base) {
			return
		}
		r, err := url.Parse(ref)
		if err != nil {
			t.Fatalf("plainAbsolutePath(%q), which net/url cannot parse: %v", ref, err)
		}
		if got, want := resolveRef(base, ref), base.ResolveReference(r).String(); got != want {
			t.Errorf("resolveRef(%q, %q) = %q, want %q", baseURL, ref, got, want)
		}
	})
}

// FuzzIsHTTP holds isHTTP to what it was: a prefix of the trimmed,
// lower-cased text.
func FuzzIsHTTP(f *testing.F) {
	for _, s := range []string{"http://x", "HTTPS://x", " hTtP://", "https:/", "http:", "ftp://x", "\u212Attp://", "http\u017F://", "https\xff://"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l := strings.ToLower(strings.TrimSpace(s))
		if want := strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://"); isHTTP(s) != want {
			t.Errorf("isHTTP(%q) = %v, want %v", s, !want, want)
		}
	})
}

// TestCanonicalFast holds canonical's shortcut for common names to its
// lookup: each is its own canonical spelling, or no RSS name.
func TestCanonicalFast(t *testing.T) {
	for _, n := range []string{"title", "link", "description", "item", "guid", "pubDate", "category", "author", "enclosure",
		"encoded", "creator", "thumbnail", "duration", "comments", "channel", "language", "lastBuildDate", "image", "url"} {
		if c, ok := rssNames[strings.ToLower(n)]; ok && c != n {
			t.Errorf("canonical(%q) is %q, not itself", n, c)
		}
	}
}
