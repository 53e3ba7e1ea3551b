package opml

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestWrite: a feed with several labels is in the folder of each (it was
// in its first label's only, and a label with ',' or '/', which category
// cannot hold, was lost to other readers).
func TestWrite(t *testing.T) {
	feeds := []Outline{
		{URL: "https://a.example/feed", Title: "A & <B>", Labels: []string{"Tech", "Go"}},
		{URL: "https://top.example/rss", HTMLURL: "https://top.example/"},
		{URL: " https://b.example/feed ", Title: `"Quoted" 'B'`, HTMLURL: "https://b.example/?x=1&y=2", Labels: []string{"News"}},
		{URL: "https://c.example/feed", Title: "C", Labels: []string{" Tech ", "", "Tech", "a/b", "x,y", "Ünïcode"}},
	}
	want := `<?xml version="1.0" encoding="UTF-8"?>
<opml version="2.0">
  <head>
    <title>My &amp; feeds</title>
  </head>
  <body>
    <outline text="Tech" title="Tech">
      <outline type="rss" text="A &amp; &lt;B&gt;" title="A &amp; &lt;B&gt;" xmlUrl="https://a.example/feed" category="Tech,Go"/>
      <outline type="rss" text="C" title="C" xmlUrl="https://c.example/feed" category="Tech,Ünïcode"/>
    </outline>
    <outline text="Go" title="Go">
      <outline type="rss" text="A &amp; &lt;B&gt;" title="A &amp; &lt;B&gt;" xmlUrl="https://a.example/feed" category="Tech,Go"/>
    </outline>
    <outline type="rss" text="https://top.example/rss" title="https://top.example/rss" xmlUrl="https://top.example/rss" htmlUrl="https://top.example/"/>
    <outline text="News" title="News">
      <outline type="rss" text="&#34;Quoted&#34; &#39;B&#39;" title="&#34;Quoted&#34; &#39;B&#39;" xmlUrl="https://b.example/feed" htmlUrl="https://b.example/?x=1&amp;y=2" category="News"/>
    </outline>
    <outline text="a/b" title="a/b">
      <outline type="rss" text="C" title="C" xmlUrl="https://c.example/feed" category="Tech,Ünïcode"/>
    </outline>
    <outline text="x,y" title="x,y">
      <outline type="rss" text="C" title="C" xmlUrl="https://c.example/feed" category="Tech,Ünïcode"/>
    </outline>
    <outline text="Ünïcode" title="Ünïcode">
      <outline type="rss" text="C" title="C" xmlUrl="https://c.example/feed" category="Tech,Ünïcode"/>
    </outline>
  </body>
</opml>
`
	var b bytes.Buffer
	if err := Write(&b, " My & feeds ", feeds); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != want {
		t.Errorf("Write gave\n%s\nwant\n%s", got, want)
	}
	res, err := Parse(&b)
	if err != nil || len(res.Warnings) > 0 {
		t.Fatalf("Parse(Write) = %v, warnings %q", err, res.Warnings)
	}
}

func TestWriteEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, "", nil); err != nil {
		t.Fatal(err)
	}
	res, err := Parse(&b)
	if err != nil || len(res.Outlines) != 0 || len(res.Warnings) != 0 {
		t.Fatalf("Parse(Write(nil)) = %+v, %v", res, err)
	}
}

func TestWriteErrors(t *testing.T) {
	err := Write(&bytes.Buffer{}, "t", []Outline{{URL: "https://a.example/"}, {URL: "  ", Title: "No URL"}})
	if err == nil || !strings.HasPrefix(err.Error(), "opml: feed 2 ") {
		t.Errorf("Write with an empty URL: err = %v", err)
	}
	errDisk := errors.New("disk full")
	err = Write(failWriter{errDisk}, "t", nil)
	if !errors.Is(err, errDisk) || !strings.HasPrefix(err.Error(), "opml: ") {
		t.Errorf("Write to a failing writer: err = %v", err)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

func TestRoundTrip(t *testing.T) {
	feeds := []Outline{
		{URL: "https://a.example/feed?x=1&y=2", Title: `Tom & Jerry <"live"> 'n' stuff`, HTMLURL: "https://a.example/", Labels: []string{"R&D", `"Quotes"`, "<tags>"}},
		{URL: "https://b.example/feed", Title: "Ünïcödé – 日本語 – emoji 🎉", Labels: []string{"Café", "Ελληνικά"}},
		{URL: "https://c.example/feed", Title: "Tabs\tand\nnewlines\r\ninside", Labels: []string{"Café", "Second"}},
		{URL: "https://d.example/feed", Title: "No labels", Labels: []string{}},
		{URL: "https://a.example/feed?x=1&y=2", Title: "A repeat", Labels: []string{"Other"}},
		{URL: "https://e.example/feed", Title: "First label with a comma", Labels: []string{"News, World", "Politics/US"}},
		{URL: "https://f.example/feed", Title: "&amp; is not decoded twice", Labels: []string{"&lt;"}},
	}
	var b bytes.Buffer
	if err := Write(&b, `Subscriptions & "more"`, feeds); err != nil {
		t.Fatal(err)
	}
	res, err := Parse(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if res.Title != `Subscriptions & "more"` || len(res.Warnings) > 0 {
		t.Errorf("Title %q, warnings %q", res.Title, res.Warnings)
	}
	// Folders come out in order of first appearance, so feeds may move;
	// a feed comes once per folder, and its outlines' labels together are
	// its labels (as feed-sub import puts them together).
	titles, labels := map[string][]string{}, map[string][]string{}
	for _, o := range res.Outlines {
		if !slices.Contains(titles[o.URL], o.Title) {
			titles[o.URL] = append(titles[o.URL], o.Title)
		}
		for _, l := range o.Labels {
			if !slices.Contains(labels[o.URL], l) {
				labels[o.URL] = append(labels[o.URL], l)
			}
		}
	}
	wantTitles, wantLabels := map[string][]string{}, map[string][]string{}
	for _, f := range feeds {
		wantTitles[f.URL] = append(wantTitles[f.URL], f.Title)
		for _, l := range f.Labels {
			if !slices.Contains(wantLabels[f.URL], l) {
				wantLabels[f.URL] = append(wantLabels[f.URL], l)
			}
		}
	}
	for url := range wantTitles {
		slices.Sort(titles[url])
		slices.Sort(wantTitles[url])
		slices.Sort(labels[url])
		slices.Sort(wantLabels[url])
		if !reflect.DeepEqual(titles[url], wantTitles[url]) || !reflect.DeepEqual(labels[url], wantLabels[url]) && len(wantLabels[url]) > 0 {
			t.Errorf("round trip of %q: titles %q, labels %q; want %q, %q", url, titles[url], labels[url], wantTitles[url], wantLabels[url])
		}
	}
}

// feedpipe's own settings travel in attributes of its namespace: Parse
// reads them back, from a well-formed document and a damaged one alike;
// another namespace's attributes of the same names are not taken for them.
func TestFeedpipeAttributes(t *testing.T) {
	feeds := []Outline{
		{URL: "https://blog.example/", Title: "Blog", SourceType: "website", Scrape: `{"discovery_mode":"list","list_config":{"article_selector":"ul.posts a"}}`},
		{URL: "https://a.example/feed", Title: "A", Fulltext: true, Labels: []string{"x"}},
		{URL: "https://b.example/feed", Title: "B"},
	}
	var b bytes.Buffer
	if err := Write(&b, "t", feeds); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `<opml version="2.0" xmlns:feedpipe="`+Namespace+`">`) {
		t.Fatalf("no namespace declared:\n%s", b.String())
	}
	damaged := strings.Replace(b.String(), "<body>", "<body><outline text=\"broken\" & >", 1)
	for name, doc := range map[string]string{"well-formed": b.String(), "damaged": damaged} {
		res, err := Parse(strings.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		byURL := map[string]Outline{}
		for _, o := range res.Outlines {
			byURL[o.URL] = o
		}
		for _, f := range feeds {
			o := byURL[f.URL]
			if o.SourceType != f.SourceType || o.Fulltext != f.Fulltext || o.Scrape != f.Scrape {
				t.Errorf("%s: %s came back as %+v", name, f.URL, o)
			}
		}
	}
	// Without feedpipe's settings, the document is plain OPML.
	b.Reset()
	Write(&b, "t", feeds[2:])
	if strings.Contains(b.String(), "feedpipe") {
		t.Errorf("plain feeds written with the namespace:\n%s", b.String())
	}
	other := `<opml version="2.0" xmlns:x="urn:other"><body><outline xmlUrl="https://c.example/" x:fulltext="true" x:sourceType="website"/></body></opml>`
	res, err := Parse(strings.NewReader(other))
	if err != nil || len(res.Outlines) != 1 || res.Outlines[0].Fulltext || res.Outlines[0].SourceType != "" {
		t.Errorf("another namespace's attributes read as feedpipe's: %+v, %v", res.Outlines, err)
	}
}
