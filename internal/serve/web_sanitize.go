package serve

import (
	"html/template"
	"net/url"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Feed HTML is untrusted (docs/design.md#security): the web page shows an entry's
// content only through sanitise, which keeps the markup of an article
// (bluemonday's policy for user content: text, links, images, lists,
// tables, quotes, code) and drops everything else: script, style, event
// handler attributes, forms, frames, and URLs of any scheme but http,
// https and mailto. The Content-Security-Policy of the pages is the second
// wall: a script that got through would not run.

// contentPolicy is the policy of sanitise; a Policy is safe for concurrent
// use once made.
var contentPolicy = func() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	// A relative URL would point into feed-serve: sanitise makes the
	// entry's relative URLs absolute first, and drops those it cannot.
	p.AllowRelativeURLs(false)
	p.RequireNoFollowOnLinks(true)
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	return p
}()

// sanitise returns the HTML fragment s, whose relative URLs are relative
// to base (the entry's link), fit to be shown in a page.
func sanitise(s, base string) template.HTML {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return template.HTML(contentPolicy.Sanitize(absolutise(s, base)))
}

// urlAttrs are the attributes that hold a URL the policy may keep.
var urlAttrs = map[string]bool{"href": true, "src": true, "cite": true, "poster": true}

// absolutise resolves the URLs of the fragment s against base; without
// a base (or a fragment that cannot be parsed) it returns s as it is,
// and the policy drops the relative URLs.
func absolutise(s, base string) string {
	b, err := url.Parse(base)
	if err != nil || !b.IsAbs() || (b.Scheme != "http" && b.Scheme != "https") {
		return s
	}
	ctx := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
	nodes, err := html.ParseFragment(strings.NewReader(s), ctx)
	if err != nil {
		return s
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			for i, a := range n.Attr {
				if !urlAttrs[a.Key] || a.Namespace != "" {
					continue
				}
				if u, err := url.Parse(strings.TrimSpace(a.Val)); err == nil && !u.IsAbs() {
					n.Attr[i].Val = b.ResolveReference(u).String()
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	var out strings.Builder
	for _, n := range nodes {
		walk(n)
		if err := html.Render(&out, n); err != nil {
			return s
		}
	}
	return out.String()
}
