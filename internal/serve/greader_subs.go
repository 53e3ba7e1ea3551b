package serve

import (
	"bytes"
	"cmp"
	"errors"
	"strconv"
	"strings"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/sub"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The Google Reader API's subscriptions and labels: their lists, and
// their changes (an admin's), through the functions feed-sub uses.

type grCategory struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

type grSubscription struct {
	ID            string       `json:"id"`
	Title         string       `json:"title"`
	Categories    []grCategory `json:"categories"`
	SortID        string       `json:"sortid"`
	FirstItemMsec string       `json:"firstitemmsec"`
	URL           string       `json:"url"`
	HTMLURL       string       `json:"htmlUrl"`
	IconURL       string       `json:"iconUrl"`
}

// feedTitle is what a reader app calls a feed: the name it was
// subscribed with, or its own title, or its URL.
func feedTitle(sb ndjson.Subscription, title string) string {
	switch {
	case sb.Name != "":
		return sb.Name
	case title != "":
		return title
	}
	return sb.URL
}

// siteOf is a feed's htmlUrl: the site it links to, else the feed itself.
func siteOf(sb ndjson.Subscription, fs catalog.FeedState) string {
	return cmp.Or(webLink(fs.Link), sb.URL)
}

// subscriptionList is GET /reader/api/0/subscription/list.
func (g *greq) subscriptionList() {
	out := []grSubscription{}
	err := g.s.cat.Feeds(g.ctx(), catalog.FeedFilter{Brief: true}, func(f *catalog.Feed) error {
		cats := []grCategory{}
		for _, l := range f.Sub.Labels {
			if labelProblem(l) == "" {
				cats = append(cats, grCategory{ID: labelStream(l), Label: l})
			}
		}
		out = append(out, grSubscription{ID: "feed/" + f.Sub.FeedID, Title: feedTitle(f.Sub, f.State.Title), Categories: cats,
			SortID: f.Sub.FeedID[:8], FirstItemMsec: "0", URL: f.Sub.URL, HTMLURL: siteOf(f.Sub, f.State)})
		return nil
	})
	if err != nil {
		g.s.serverError(g.w, g.r, err)
		return
	}
	g.json(map[string]any{"subscriptions": out})
}

// labels are the labels of the subscriptions (those that can be a
// stream), sorted, and the feeds of each.
func (g *greq) labels() (map[string][]string, error) {
	byLabel := map[string][]string{}
	err := g.s.cat.Feeds(g.ctx(), catalog.FeedFilter{Brief: true}, func(f *catalog.Feed) error {
		for _, l := range f.Sub.Labels {
			if labelProblem(l) == "" {
				byLabel[l] = append(byLabel[l], f.Sub.FeedID)
			}
		}
		return nil
	})
	return byLabel, err
}

// tagList is GET /reader/api/0/tag/list: the starred state and the
// labels, as folders.
func (g *greq) tagList() {
	byLabel, err := g.labels()
	if err != nil {
		g.s.serverError(g.w, g.r, err)
		return
	}
	type tag struct {
		ID     string `json:"id"`
		SortID string `json:"sortid,omitempty"`
		Type   string `json:"type,omitempty"`
	}
	tags := []tag{{ID: stateStarred}}
	for _, l := range sortedKeys(byLabel) {
		tags = append(tags, tag{ID: labelStream(l), Type: "folder"})
	}
	g.json(map[string]any{"tags": tags})
}

// subscriptionEdit is POST /reader/api/0/subscription/edit: ac=subscribe
// (s=feed/URL, t= its name, a= a label), unsubscribe (s=, one or more),
// or edit (t= renames, a= adds labels, r= removes them); through the
// functions feed-sub uses, which check and refuse alike.
func (g *greq) subscriptionEdit() {
	ac := g.form.get("ac")
	ss := g.form["s"]
	if len(ss) == 0 {
		badParam(g.w, g.r, "s", "s is missing: the feed (feed/URL, or feed/ID as subscription/list gives it)")
		return
	}
	var refs []string
	for _, s := range ss {
		ref, ok := strings.CutPrefix(s, "feed/")
		if !ok || ref == "" {
			badParam(g.w, g.r, "s", "s "+strconv.Quote(clip(s))+" is not a feed: feed/URL or feed/ID")
			return
		}
		refs = append(refs, ref)
	}
	var add, rm []string
	for _, p := range []struct {
		name string
		to   *[]string
	}{{"a", &add}, {"r", &rm}} {
		for _, v := range g.form[p.name] {
			l, ok := labelName(v, g.user)
			if !ok {
				badParam(g.w, g.r, p.name, p.name+" "+strconv.Quote(clip(v))+" is not a label: user/-/label/NAME")
				return
			}
			*p.to = append(*p.to, l)
		}
	}
	var msg bytes.Buffer
	cfg := g.s.subConfig(&msg)
	var err error
	switch ac {
	case "subscribe":
		if len(refs) != 1 {
			badParam(g.w, g.r, "s", "subscribe takes one s")
			return
		}
		_, _, err = sub.Add(cfg, sub.Spec{URL: refs[0], Name: g.form.get("t"), Labels: add})
	case "unsubscribe":
		err = sub.Remove(cfg, refs)
	case "edit":
		c := sub.Changes{AddLabels: add, RmLabels: rm}
		if t, ok := g.form["t"]; ok && len(t) > 0 {
			c.Name = &t[0]
		}
		if c.Name == nil && len(add) == 0 && len(rm) == 0 {
			g.text("OK")
			return
		}
		err = sub.Set(cfg, refs, c)
	default:
		badParam(g.w, g.r, "ac", "ac "+strconv.Quote(clip(ac))+" is not one: subscribe, unsubscribe or edit")
		return
	}
	if err != nil {
		g.s.subError(g.w, g.r, err)
		return
	}
	g.text("OK")
}

// quickAdd is POST /reader/api/0/subscription/quickadd: quickadd=URL
// (or feed/URL) subscribes, as feed-sub add does.
func (g *greq) quickAdd() {
	u := strings.TrimPrefix(g.form.get("quickadd"), "feed/")
	if u == "" {
		badParam(g.w, g.r, "quickadd", "quickadd is missing: the feed's URL")
		return
	}
	var msg bytes.Buffer
	sb, _, err := sub.Add(g.s.subConfig(&msg), sub.Spec{URL: u})
	if err != nil {
		if errors.Is(err, sub.ErrInvalid) {
			g.json(map[string]any{"numResults": 0, "query": u, "error": err.Error()})
			return
		}
		g.s.subError(g.w, g.r, err)
		return
	}
	fs, _, _ := g.s.cat.State(g.ctx(), sb.FeedID)
	g.json(map[string]any{"numResults": 1, "query": u, "streamId": "feed/" + sb.FeedID, "streamName": feedTitle(sb, fs.Title)})
}
