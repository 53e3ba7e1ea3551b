package serve

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
)

// greaderWorld is a world with the Google Reader API's user alice, and
// her Auth token.
func greaderWorld(t *testing.T) (*world, string) {
	t.Helper()
	t.Cleanup(catalog.SetTestIterations(1000))
	w := newWorld(t)
	if err := w.cat.AddUser(context.Background(), "alice", "secret password", catalog.RoleAdmin, t0); err != nil {
		t.Fatal(err)
	}
	r := w.do("POST", "/accounts/ClientLogin", "Email=alice&Passwd=secret+password&service=reader", "Content-Type", "application/x-www-form-urlencoded")
	if r.status != 200 {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	var auth string
	for _, l := range strings.Split(string(r.body), "\n") {
		if a, ok := strings.CutPrefix(l, "Auth="); ok {
			auth = a
		}
	}
	if len(auth) != 64 || !strings.Contains(string(r.body), "SID=") {
		t.Fatalf("login: %s", r.body)
	}
	return w, auth
}

// gr sends a request of the API with the token (GET without a body).
func (w *world) gr(auth, method, path, form string) reply {
	w.t.Helper()
	h := []string{"Authorization", "GoogleLogin auth=" + auth}
	if form != "" {
		h = append(h, "Content-Type", "application/x-www-form-urlencoded")
	}
	return w.do(method, path, form, h...)
}

type grItems struct {
	ID           string   `json:"id"`
	Items        []grItem `json:"items"`
	Continuation string   `json:"continuation"`
}

type grCounts struct {
	Max    int `json:"max"`
	Counts []struct {
		ID    string `json:"id"`
		Count int    `json:"count"`
	} `json:"unreadcounts"`
}

func (c grCounts) of(id string) int {
	for _, u := range c.Counts {
		if u.ID == id {
			return u.Count
		}
	}
	return 0
}

func (w *world) counts(auth string) grCounts {
	w.t.Helper()
	var c grCounts
	r := w.gr(auth, "GET", "/reader/api/0/unread-count?output=json", "")
	if r.status != 200 {
		w.t.Fatalf("unread-count: %d %s", r.status, r.body)
	}
	r.json(w.t, &c)
	return c
}

// restUnread is the unread count of a feed as GET /feeds?reader= has it.
func (w *world) restUnread(reader, feedID string) int {
	w.t.Helper()
	var out struct {
		Feeds []FeedOut `json:"feeds"`
	}
	w.get("/feeds?reader="+reader, "Authorization", "Bearer "+testToken).json(w.t, &out)
	for _, f := range out.Feeds {
		if f.FeedID == feedID && f.Unread != nil {
			return *f.Unread
		}
	}
	w.t.Fatalf("no unread count of %s in GET /feeds?reader=%s", feedID, reader)
	return 0
}

// TestGReaderOff: without a user, the API is not there, and says how to
// make one.
func TestGReaderOff(t *testing.T) {
	w := newWorld(t)
	for _, path := range []string{"/accounts/ClientLogin", "/reader/api/0/subscription/list", "/reader/atom/user%2F-%2Fstate%2Fcom.google%2Freading-list"} {
		p := w.do("POST", path, "Email=a&Passwd=b", "Content-Type", "application/x-www-form-urlencoded").problem(t, 404)
		if !strings.Contains(p.Detail, "feed-serve user add") {
			t.Errorf("%s: %s", path, p.Detail)
		}
	}
}

// TestGReaderAuth: ClientLogin refuses a wrong password and an unknown
// user alike; every route refuses a request without the token, with
// another scheme or a token it did not give; a write refuses an edit
// token that is not one.
func TestGReaderAuth(t *testing.T) {
	w, auth := greaderWorld(t)
	form := []string{"Content-Type", "application/x-www-form-urlencoded"}
	for _, body := range []string{"Email=alice&Passwd=wrong", "Email=mallory&Passwd=secret+pw"} {
		r := w.do("POST", "/accounts/ClientLogin", body, form...)
		if r.status != 403 || !strings.Contains(string(r.body), "Error=BadAuthentication") {
			t.Errorf("%s: %d %s", body, r.status, r.body)
		}
	}
	w.do("POST", "/accounts/ClientLogin", "Email=alice", form...).problem(t, 400)
	w.get("/accounts/ClientLogin?Email=alice&Passwd=secret+pw").problem(t, 405)
	for _, h := range [][]string{
		nil,
		{"Authorization", "GoogleLogin auth=" + strings.Repeat("0", 64)},
		{"Authorization", "Bearer " + auth},
		{"Authorization", "GoogleLogin " + auth},
		{"Authorization", "Bearer " + testToken}, // the REST API's token is not a user's
	} {
		for _, path := range []string{"/reader/api/0/subscription/list", "/reader/api/0/stream/contents/user%2F-%2Fstate%2Fcom.google%2Freading-list", "/reader/atom/", "/reader/api/0/edit-tag"} {
			r := w.do("GET", path, "", h...)
			if path == "/reader/api/0/edit-tag" {
				r = w.do("POST", path, "i=1&a="+stateRead, append(h, form...)...)
			}
			r.problem(t, 401)
		}
	}
	// An edit token of the user's own is taken, another is not.
	r := w.gr(auth, "GET", "/reader/api/0/token", "")
	tok := strings.TrimSpace(string(r.body))
	if r.status != 200 || len(tok) != 64 {
		t.Fatalf("token: %d %s", r.status, r.body)
	}
	r = w.gr(auth, "POST", "/reader/api/0/edit-tag", "i=1&a="+stateRead+"&T="+auth) // the auth token is no edit token
	r.problem(t, 401)
	if r.header.Get("X-Reader-Google-Bad-Token") != "true" {
		t.Errorf("a bad T without X-Reader-Google-Bad-Token")
	}
	if r := w.gr(auth, "POST", "/reader/api/0/edit-tag", "i=1&a="+stateRead+"&T="+tok); r.status != 200 || string(r.body) != "OK" {
		t.Errorf("edit-tag with T: %d %s", r.status, r.body)
	}
	// A new password ends the sessions.
	if err := w.cat.SetPassword(context.Background(), "alice", "a new password"); err != nil {
		t.Fatal(err)
	}
	w.gr(auth, "GET", "/reader/api/0/user-info", "").problem(t, 401)
	// Unknown routes and methods.
	_, auth = greaderWorldLogin(t, w)
	w.gr(auth, "GET", "/reader/api/0/nope", "").problem(t, 404)
	w.gr(auth, "GET", "/reader/api/0/edit-tag", "").problem(t, 405)
}

// greaderWorldLogin logs alice in again, with the password "new pw".
func greaderWorldLogin(t *testing.T, w *world) (*world, string) {
	t.Helper()
	r := w.do("POST", "/accounts/ClientLogin", "Email=alice&Passwd=new+pw", "Content-Type", "application/x-www-form-urlencoded")
	_, auth, _ := strings.Cut(string(r.body), "Auth=")
	return w, strings.TrimSpace(auth)
}

// TestGReaderRead: the subscriptions, tags, unread counts and streams
// as the catalog has them.
func TestGReaderRead(t *testing.T) {
	w, auth := greaderWorld(t)
	ctx := context.Background()
	tc, news := w.ids["TechCrunch.xml"], w.ids["AmazonWebServicesBlog.xml"]

	var info map[string]any
	w.gr(auth, "GET", "/reader/api/0/user-info", "").json(t, &info)
	if info["userName"] != "alice" || info["userId"] != "alice" {
		t.Errorf("user-info %v", info)
	}

	var subs struct {
		Subscriptions []grSubscription `json:"subscriptions"`
	}
	w.gr(auth, "GET", "/reader/api/0/subscription/list?output=json", "").json(t, &subs)
	if len(subs.Subscriptions) != 3 {
		t.Fatalf("subscriptions %+v", subs)
	}
	for _, s := range subs.Subscriptions {
		if s.ID == "feed/"+news && (len(s.Categories) != 2 || s.Categories[0].ID != "user/-/label/news" || s.Categories[1].Label != "cloud") {
			t.Errorf("labels of %+v", s)
		}
		if !strings.HasPrefix(s.URL, w.feeds.URL) || s.Title == "" {
			t.Errorf("subscription %+v", s)
		}
	}

	var tags struct {
		Tags []struct{ ID, Type string } `json:"tags"`
	}
	w.gr(auth, "GET", "/reader/api/0/tag/list", "").json(t, &tags)
	var names []string
	for _, tg := range tags.Tags {
		names = append(names, tg.ID)
	}
	if got := strings.Join(names, " "); got != "user/-/state/com.google/starred user/-/label/cloud user/-/label/news user/-/label/video" {
		t.Errorf("tags %s", got)
	}

	// The unread counts are the catalog's, and every entry is unread.
	want, err := w.cat.UnreadCounts(ctx, "alice", t0.Add(-DefaultUnreadWindow))
	if err != nil {
		t.Fatal(err)
	}
	c := w.counts(auth)
	total := 0
	for id, u := range want {
		if c.of("feed/"+id) != u.Count || u.Count == 0 {
			t.Errorf("feed %s: %d unread, the catalog says %d", id, c.of("feed/"+id), u.Count)
		}
		total += u.Count
	}
	if c.of(stateReadingList) != total || total != len(w.storedEntries()) || c.Max != total {
		t.Errorf("reading list %d unread (max %d), the catalog %d, entries %d", c.of(stateReadingList), c.Max, total, len(w.storedEntries()))
	}
	if c.of("user/-/label/news") != want[tc].Count+want[news].Count {
		t.Errorf("label news: %d", c.of("user/-/label/news"))
	}

	// A feed's stream, page by page, newest first, and oldest first.
	var all []string
	cont := ""
	for range 100 {
		var page grItems
		r := w.gr(auth, "GET", "/reader/api/0/stream/contents/"+url.PathEscape("feed/"+tc)+"?n=7&c="+cont, "")
		r.json(t, &page)
		for _, it := range page.Items {
			if it.Origin.StreamID != "feed/"+tc || !strings.HasPrefix(it.ID, itemPrefix) || it.Title == "" || len(it.Alternate) != 1 ||
				it.Categories[0] != stateReadingList || it.Categories[1] != "user/-/label/news" {
				t.Fatalf("item %+v", it)
			}
			all = append(all, it.ID)
		}
		if cont = page.Continuation; cont == "" {
			break
		}
	}
	if len(all) != want[tc].Count {
		t.Errorf("%d items in the feed's stream, %d stored", len(all), want[tc].Count)
	}
	var old grItems
	w.gr(auth, "GET", "/reader/api/0/stream/contents/feed%2F"+tc+"?n=1000&r=o", "").json(t, &old)
	if len(old.Items) != len(all) || old.Items[0].ID != all[len(all)-1] {
		t.Errorf("r=o: %d items", len(old.Items))
	}
	// The same feed named by its URL; a label; the reading list by s=.
	var byURL grItems
	w.gr(auth, "GET", "/reader/api/0/stream/contents/"+url.PathEscape("feed/"+w.feeds.URL+"/TechCrunch.xml")+"?n=1000", "").json(t, &byURL)
	if len(byURL.Items) != len(all) {
		t.Errorf("by URL: %d items", len(byURL.Items))
	}
	var ids struct {
		ItemRefs []struct{ ID string } `json:"itemRefs"`
	}
	w.gr(auth, "GET", "/reader/api/0/stream/items/ids?s=user/-/label/news&n=1000", "").json(t, &ids)
	if len(ids.ItemRefs) != c.of("user/-/label/news") {
		t.Errorf("label news: %d ids", len(ids.ItemRefs))
	}
	// Items by id, short and long.
	short := itemShort(all[1][len(itemPrefix):])
	var got grItems
	w.gr(auth, "POST", "/reader/api/0/stream/items/contents", "i="+short+"&i="+url.QueryEscape(all[0])).json(t, &got)
	if len(got.Items) != 2 || itemShort(got.Items[0].ID[len(itemPrefix):]) != short || got.Items[1].ID != all[0] {
		t.Errorf("items/contents %+v", got.Items)
	}
	// ot and nt bound the time of the items.
	var none grItems
	w.gr(auth, "GET", "/reader/api/0/stream/contents?s="+stateReadingList+"&ot="+strconv.FormatInt(t0.Add(1e12).Unix(), 10), "").json(t, &none)
	if len(none.Items) != 0 {
		t.Errorf("ot after everything: %d items", len(none.Items))
	}
	w.gr(auth, "GET", "/reader/api/0/stream/contents?s="+stateReadingList+"&nt="+strconv.FormatInt(t0.Unix(), 10), "").json(t, &none)
	if len(none.Items) != 0 {
		t.Errorf("nt before everything: %d items", len(none.Items))
	}
	// Bad ids and parameters.
	for _, path := range []string{
		"/reader/api/0/stream/contents/feed%2Fnot-a-feed",
		"/reader/api/0/stream/contents/user%2Fbob%2Fstate%2Fcom.google%2Fstarred",
		"/reader/api/0/stream/contents/feed%2F" + tc + "?n=x",
		"/reader/api/0/stream/contents/feed%2F" + tc + "?c=nope",
		"/reader/api/0/stream/items/ids",
	} {
		w.gr(auth, "GET", path, "").problem(t, 400)
	}
	w.gr(auth, "POST", "/reader/api/0/stream/items/contents", "i=tag:google.com,2005:reader/item/xyz").problem(t, 400)
	w.gr(auth, "GET", "/reader/api/0/stream/contents/"+url.PathEscape("feed/http://nowhere.example/feed"), "").problem(t, 404)
}

// TestGReaderMarks: edit-tag and mark-all-as-read change the user's
// marks, which the catalog, the REST API and the API's own counts and
// streams all show.
func TestGReaderMarks(t *testing.T) {
	w, auth := greaderWorld(t)
	ctx := context.Background()
	tc, yt := w.ids["TechCrunch.xml"], w.ids["youtube_atom.xml"]
	var page grItems
	w.gr(auth, "GET", "/reader/api/0/stream/contents/feed%2F"+tc+"?n=2", "").json(t, &page)
	a, b := page.Items[0], page.Items[1]
	uidA := a.ID[len(itemPrefix):]
	before := w.counts(auth)

	// Read one by its long id, star the other by its short one.
	for _, form := range []string{"i=" + url.QueryEscape(a.ID) + "&a=" + stateRead + "&r=" + stateKeptUnread, "i=" + itemShort(b.ID[len(itemPrefix):]) + "&a=user/alice/state/com.google/starred"} {
		if r := w.gr(auth, "POST", "/reader/api/0/edit-tag", form); r.status != 200 || string(r.body) != "OK" {
			t.Fatalf("edit-tag %s: %d %s", form, r.status, r.body)
		}
	}
	after := w.counts(auth)
	if after.of("feed/"+tc) != before.of("feed/"+tc)-1 || after.of(stateReadingList) != before.of(stateReadingList)-1 {
		t.Errorf("unread after a read: %d, before %d", after.of("feed/"+tc), before.of("feed/"+tc))
	}
	// The catalog's view.
	rows, err := w.cat.EntriesByUIDs(ctx, []string{uidA}, "alice")
	if err != nil || len(rows) != 1 || !rows[0].Read || rows[0].Starred {
		t.Fatalf("the catalog: %+v %v", rows, err)
	}
	// The REST API's view: the entries with alice's marks, her unread
	// ones, her starred ones, and the feeds' unread counts.
	var list struct {
		Entries []struct {
			EntryUID string `json:"entry_uid"`
			Read     *bool  `json:"read"`
			Starred  *bool  `json:"starred"`
		} `json:"entries"`
	}
	w.get("/feeds/"+tc+"/entries?reader=alice&order=first_seen&limit=2", "Authorization", "Bearer "+testToken).json(t, &list)
	if len(list.Entries) != 2 || list.Entries[0].EntryUID != uidA || !*list.Entries[0].Read || *list.Entries[0].Starred || !*list.Entries[1].Starred {
		t.Errorf("REST marks %+v", list.Entries)
	}
	w.get("/entries?reader=alice&starred=true", "Authorization", "Bearer "+testToken).json(t, &list)
	if len(list.Entries) != 1 || list.Entries[0].EntryUID != b.ID[len(itemPrefix):] {
		t.Errorf("REST starred %+v", list.Entries)
	}
	w.get("/feeds/"+tc+"/entries?reader=alice&unread=true&limit=1000", "Authorization", "Bearer "+testToken).json(t, &list)
	if len(list.Entries) != after.of("feed/"+tc) {
		t.Errorf("REST unread: %d, the API %d", len(list.Entries), after.of("feed/"+tc))
	}
	if n := w.restUnread("alice", tc); n != after.of("feed/"+tc) {
		t.Errorf("GET /feeds unread %d, the API %d", n, after.of("feed/"+tc))
	}
	if n := w.restUnread("bob", tc); n != before.of("feed/"+tc) {
		t.Errorf("bob's marks are not alice's: %d", n)
	}
	w.get("/entries?reader=Not+A+Name").problem(t, 400)
	w.get("/entries?unread=maybe").problem(t, 400)

	// The starred and read streams, and xt=read.
	var st grItems
	w.gr(auth, "GET", "/reader/api/0/stream/contents/"+url.PathEscape(stateStarred), "").json(t, &st)
	if len(st.Items) != 1 || st.Items[0].ID != b.ID || !contains(st.Items[0].Categories, stateStarred) {
		t.Errorf("starred %+v", st.Items)
	}
	w.gr(auth, "GET", "/reader/api/0/stream/contents/"+url.PathEscape(stateRead), "").json(t, &st)
	if len(st.Items) != 1 || st.Items[0].ID != a.ID || !contains(st.Items[0].Categories, stateRead) {
		t.Errorf("read %+v", st.Items)
	}
	var ids struct {
		ItemRefs []struct{ ID string } `json:"itemRefs"`
	}
	w.gr(auth, "GET", "/reader/api/0/stream/items/ids?s=feed/"+tc+"&xt="+stateRead+"&n=1000", "").json(t, &ids)
	if len(ids.ItemRefs) != after.of("feed/"+tc) {
		t.Errorf("xt=read: %d ids, %d unread", len(ids.ItemRefs), after.of("feed/"+tc))
	}
	// Unread again.
	w.gr(auth, "POST", "/reader/api/0/edit-tag", "i="+url.QueryEscape(a.ID)+"&r="+stateRead)
	if w.counts(auth).of("feed/"+tc) != before.of("feed/"+tc) {
		t.Errorf("r=read left it read")
	}

	// Mark all: a feed up to a time, then a label.
	if r := w.gr(auth, "POST", "/reader/api/0/mark-all-as-read", "s=feed/"+yt+"&ts="+strconv.FormatInt(t0.Add(-1e12).UnixMicro(), 10)); string(r.body) != "OK" {
		t.Fatalf("mark-all-as-read: %d %s", r.status, r.body)
	}
	if w.counts(auth).of("feed/"+yt) != before.of("feed/"+yt) {
		t.Errorf("ts before every entry marked some read")
	}
	w.gr(auth, "POST", "/reader/api/0/mark-all-as-read", "s=feed/"+yt)
	if n := w.counts(auth).of("feed/" + yt); n != 0 || w.restUnread("alice", yt) != 0 {
		t.Errorf("after mark-all-as-read: %d unread", n)
	}
	w.gr(auth, "POST", "/reader/api/0/mark-all-as-read", "s=user/-/label/news")
	if c := w.counts(auth); c.of(stateReadingList) != 0 || len(c.Counts) != 0 {
		t.Errorf("everything read, still %+v", c)
	}
	w.gr(auth, "POST", "/reader/api/0/mark-all-as-read", "s="+stateStarred).problem(t, 400)
	w.gr(auth, "POST", "/reader/api/0/mark-all-as-read", "").problem(t, 400)
}

// TestGReaderSubscriptions: subscribe, rename, label, unsubscribe and
// quickadd, through feed-sub's functions and their checks.
func TestGReaderSubscriptions(t *testing.T) {
	w, auth := greaderWorld(t)
	tc := w.ids["TechCrunch.xml"]
	ok := func(form string) {
		t.Helper()
		if r := w.gr(auth, "POST", "/reader/api/0/subscription/edit", form); r.status != 200 || string(r.body) != "OK" {
			t.Fatalf("%s: %d %s", form, r.status, r.body)
		}
	}
	ok("ac=edit&s=feed/" + tc + "&t=Tech+news&a=user/-/label/fav&r=user/-/label/news")
	var f FeedOut
	w.get("/feeds/"+tc).json(t, &f)
	if f.Name != "Tech news" || strings.Join(f.Labels, ",") != "fav" {
		t.Errorf("after edit: %q %v", f.Name, f.Labels)
	}
	u := w.feeds.URL + "/new.xml"
	ok("ac=subscribe&s=feed/" + url.QueryEscape(u) + "&t=New&a=user/-/label/later")
	var subs struct {
		Subscriptions []grSubscription `json:"subscriptions"`
	}
	w.gr(auth, "GET", "/reader/api/0/subscription/list", "").json(t, &subs)
	if n := len(subs.Subscriptions); n != 4 || subs.Subscriptions[3].URL != u || subs.Subscriptions[3].Title != "New" || subs.Subscriptions[3].Categories[0].Label != "later" {
		t.Fatalf("after subscribe: %+v", subs.Subscriptions)
	}
	ok("ac=unsubscribe&s=" + subs.Subscriptions[3].ID)
	// The checks feed-sub makes.
	w.gr(auth, "POST", "/reader/api/0/subscription/edit", "ac=subscribe&s=feed/"+url.QueryEscape("ftp://example.com/f")).problem(t, 422)
	w.gr(auth, "POST", "/reader/api/0/subscription/edit", "ac=subscribe&s=feed/"+url.QueryEscape("file:///etc/passwd")).problem(t, 422)
	w.gr(auth, "POST", "/reader/api/0/subscription/edit", "ac=unsubscribe&s=feed/00000000-0000-5000-8000-000000000000").problem(t, 404)
	w.gr(auth, "POST", "/reader/api/0/subscription/edit", "ac=delete&s=feed/"+tc).problem(t, 400)
	w.gr(auth, "POST", "/reader/api/0/subscription/edit", "ac=edit&s=feed/"+tc+"&a=user/-/label/a%2Fb").problem(t, 400)
	// quickadd.
	var q struct {
		NumResults int    `json:"numResults"`
		StreamID   string `json:"streamId"`
		Error      string `json:"error"`
	}
	w.gr(auth, "POST", "/reader/api/0/subscription/quickadd", "quickadd="+url.QueryEscape(w.feeds.URL+"/quick.xml")).json(t, &q)
	if q.NumResults != 1 || !strings.HasPrefix(q.StreamID, "feed/") {
		t.Errorf("quickadd %+v", q)
	}
	w.gr(auth, "POST", "/reader/api/0/subscription/quickadd", "quickadd=gopher://x").json(t, &q)
	if q.NumResults != 0 || q.Error == "" {
		t.Errorf("quickadd of gopher %+v", q)
	}
}

// TestGReaderAtom: a stream as Atom, as newsboat reads it: the item's id
// as the entry's, its marks as Google Reader's categories.
func TestGReaderAtom(t *testing.T) {
	w, auth := greaderWorld(t)
	yt := w.ids["youtube_atom.xml"]
	var page grItems
	w.gr(auth, "GET", "/reader/api/0/stream/contents/feed%2F"+yt+"?n=1", "").json(t, &page)
	w.gr(auth, "POST", "/reader/api/0/edit-tag", "i="+url.QueryEscape(page.Items[0].ID)+"&a="+stateRead)
	// As newsboat asks: its feedhq-url ends in a slash, the path begins
	// with one.
	r := w.gr(auth, "GET", "//reader/atom/"+url.PathEscape("feed/"+yt)+"?n=1000", "")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/atom+xml") {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var doc struct {
		Entries []struct {
			ID         string `xml:"id"`
			Title      string `xml:"title"`
			Categories []struct {
				Term   string `xml:"term,attr"`
				Scheme string `xml:"scheme,attr"`
				Label  string `xml:"label,attr"`
			} `xml:"category"`
		} `xml:"entry"`
	}
	if err := xml.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	read, fresh := 0, 0
	for _, e := range doc.Entries {
		for _, c := range e.Categories {
			if c.Scheme != greaderScheme {
				t.Errorf("scheme %q", c.Scheme)
			}
			switch c.Label {
			case "read":
				read++
				if e.ID != page.Items[0].ID {
					t.Errorf("%s read", e.ID)
				}
			case "fresh":
				fresh++
			}
		}
	}
	if read != 1 || fresh != len(doc.Entries)-1 || len(doc.Entries) < 2 {
		t.Errorf("%d entries, %d read, %d fresh", len(doc.Entries), read, fresh)
	}
}

// TestOpenAPIReadState: openapi.json documents the read state of the
// REST API (reader, unread, starred; the unread count of a feed; the
// marks of an entry), and each documented parameter is taken.
func TestOpenAPIReadState(t *testing.T) {
	w := newWorld(t)
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	w.get("/openapi.json").json(t, &doc)
	for path, want := range map[string][]string{"/feeds": {"reader"}, "/entries": {"reader", "unread", "starred"}, "/feeds/{id}/entries": {"reader", "unread", "starred"}} {
		var get struct {
			Parameters []struct{ Name string } `json:"parameters"`
		}
		json.Unmarshal(doc.Paths[path]["get"], &get)
		var names []string
		for _, p := range get.Parameters {
			names = append(names, p.Name)
		}
		for _, n := range want {
			if !contains(names, n) {
				t.Errorf("GET %s: %s is not documented", path, n)
			}
		}
		path = strings.Replace(path, "{id}", w.ids["TechCrunch.xml"], 1)
		query := "?reader=alice&unread=true&starred=false"
		if path == "/feeds" {
			query = "?reader=alice"
		}
		if r := w.get(path+query, "Authorization", "Bearer "+testToken); r.status != 200 {
			t.Errorf("GET %s with read state: %d %s", path, r.status, r.body)
		}
	}
	for schema, prop := range map[string]string{"Feed": "unread", "Entry": "read"} {
		if doc.Components.Schemas[schema].Properties[prop] == nil {
			t.Errorf("schema %s has no %s", schema, prop)
		}
	}
}

// TestGReaderUnreadWindow: entries first seen before the unread window
// count as read, in the API and in GET /feeds?reader=, whatever their
// marks; the REST entry lists keep the catalog's own view.
func TestGReaderUnreadWindow(t *testing.T) {
	t.Cleanup(catalog.SetTestIterations(1000))
	w := newWorld(t, func(c *Config) { c.UnreadWindow = 30 * time.Second }) // the entries are a minute old
	if err := w.cat.AddUser(context.Background(), "alice", "a long password", catalog.RoleReader, t0); err != nil {
		t.Fatal(err)
	}
	_, auth := w.login(t, "alice", "a long password")
	tc := w.ids["TechCrunch.xml"]
	if c := w.counts(auth); len(c.Counts) != 0 || c.Max != 0 {
		t.Errorf("counts of old entries: %+v", c)
	}
	if n := w.restUnread("alice", tc); n != 0 {
		t.Errorf("GET /feeds unread %d", n)
	}
	var page grItems
	w.gr(auth, "GET", "/reader/api/0/stream/contents/feed%2F"+tc+"?n=3", "").json(t, &page)
	if len(page.Items) != 3 || !contains(page.Items[0].Categories, stateRead) {
		t.Errorf("old items %+v", page.Items)
	}
	w.gr(auth, "GET", "/reader/api/0/stream/contents/feed%2F"+tc+"?xt="+stateRead, "").json(t, &page)
	if len(page.Items) != 0 {
		t.Errorf("xt=read kept %d old items", len(page.Items))
	}
	var list struct {
		Entries []json.RawMessage `json:"entries"`
	}
	w.get("/feeds/"+tc+"/entries?reader=alice&unread=true&limit=5", "Authorization", "Bearer "+testToken).json(t, &list)
	if len(list.Entries) != 5 {
		t.Errorf("the catalog's view lost the old unread entries: %d", len(list.Entries))
	}
}

// login logs a user in, and returns the Auth token.
func (w *world) login(t *testing.T, user, pw string) (*world, string) {
	t.Helper()
	r := w.do("POST", "/accounts/ClientLogin", "Email="+user+"&Passwd="+url.QueryEscape(pw), "Content-Type", "application/x-www-form-urlencoded")
	_, auth, ok := strings.Cut(string(r.body), "Auth=")
	if r.status != 200 || !ok {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	return w, strings.TrimSpace(auth)
}
