package serve

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/safetext"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// TestItemIDs: both forms of an item id, and what is not one.
func TestItemIDs(t *testing.T) {
	for _, tc := range []struct{ in, uid string }{
		{"tag:google.com,2005:reader/item/00000000000000ff", "00000000000000ff"},
		{"tag:google.com,2005:reader/item/FFFFFFFFFFFFFFFF", "ffffffffffffffff"},
		{"255", "00000000000000ff"},
		{"-1", "ffffffffffffffff"},
		{"18446744073709551615", "ffffffffffffffff"},
		{"0", "0000000000000000"},
		{"-9223372036854775808", "8000000000000000"},
		{"tag:google.com,2005:reader/item/ff", ""},
		{"tag:google.com,2005:reader/item/000000000000000g", ""},
		{"18446744073709551616", ""},
		{"-0", ""},
		{"+1", ""},
		{"007", ""},
		{"", ""},
		{"1e3", ""},
		{"00000000000000ff", ""}, // bare hex is refused: it could be decimal
	} {
		uid, err := parseItemID(tc.in)
		if uid != tc.uid || (err == nil) != (tc.uid != "") {
			t.Errorf("%q: %q %v, want %q", tc.in, uid, err, tc.uid)
		}
	}
	if itemShort("ffffffffffffffff") != "-1" || itemShort("00000000000000ff") != "255" {
		t.Errorf("short forms %s %s", itemShort("ffffffffffffffff"), itemShort("00000000000000ff"))
	}
}

func FuzzItemID(f *testing.F) {
	for _, s := range []string{"tag:google.com,2005:reader/item/00000000000000ff", "255", "-1", "18446744073709551615", "007", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		uid, err := parseItemID(s)
		if err != nil {
			return
		}
		if !ndjson.IsEntryUID(uid) {
			t.Fatalf("%q gave uid %q", s, uid)
		}
		for _, form := range []string{itemLong(uid), itemShort(uid)} {
			if back, err := parseItemID(form); err != nil || back != uid {
				t.Fatalf("%q: %s read back as %q %v", s, form, back, err)
			}
		}
	})
}

// TestStreams: the stream ids read, and those refused.
func TestStreams(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want stream
		ok   bool
	}{
		{"user/-/state/com.google/reading-list", stream{Kind: streamReadingList}, true},
		{"user/alice/state/com.google/starred", stream{Kind: streamStarred}, true},
		{"user/-/state/com.google/read", stream{Kind: streamRead}, true},
		{"user/-/label/news", stream{Kind: streamLabel, Label: "news"}, true},
		{"user/-/label/caf\u00e9 au lait", stream{Kind: streamLabel, Label: "caf\u00e9 au lait"}, true},
		{"feed/2b0a6a4e-8a2f-5d1c-9b3e-0c1d2e3f4a5b", stream{Kind: streamFeed, Feed: "2b0a6a4e-8a2f-5d1c-9b3e-0c1d2e3f4a5b"}, true},
		{"feed/https://example.com/feed?x=1", stream{Kind: streamFeed, Feed: "https://example.com/feed?x=1"}, true},
		{"feed/ftp://example.com/feed", stream{}, false},
		{"feed/", stream{}, false},
		{"user/bob/state/com.google/starred", stream{}, false},
		{"user/-/label/../x", stream{}, false},
		{"user/-/label/a/b", stream{}, false},
		{"user/-/label/", stream{}, false},
		{"user/-/state/com.google/broadcast", stream{}, false},
		{"user/-/label/a\nb", stream{}, false},
		{"splice/x", stream{}, false},
	} {
		got, err := parseStream(tc.in, "alice")
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("%q: %+v %v", tc.in, got, err)
		}
	}
}

func FuzzStream(f *testing.F) {
	for _, s := range []string{"user/-/state/com.google/reading-list", "user/-/label/news", "feed/https://example.com/f", "feed/2b0a6a4e-8a2f-5d1c-9b3e-0c1d2e3f4a5b", "user/alice/state/com.google/read"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := parseStream(s, "alice")
		if err != nil {
			return
		}
		if strings.ContainsAny(st.Label, "/\n\x00") || (st.Kind == streamLabel) == (st.Label == "") {
			t.Fatalf("%q: %+v", s, st)
		}
		back, err := parseStream(st.id(), "alice")
		if err != nil || back != st {
			t.Fatalf("%q: %+v reads back as %+v %v", s, st, back, err)
		}
	})
}

// TestGreaderForm: query and body together, and the caps.
func TestGreaderForm(t *testing.T) {
	f, err := parseGreaderForm("s=a&n=2", "i=1&i=2&s=b")
	if err != nil || f.get("s") != "b" || len(f["i"]) != 2 || f.get("n") != "2" {
		t.Fatalf("%v %v", f, err)
	}
	if _, err := parseGreaderForm("", strings.Repeat("i=1&", maxFormItems+1)); err == nil {
		t.Errorf("too many i= taken")
	}
	if _, err := parseGreaderForm("", "a=%zz"); err == nil {
		t.Errorf("a bad escape taken")
	}
}

func FuzzGreaderForm(f *testing.F) {
	f.Add("s=a&n=2", "i=1&i=2&s=b&T=x")
	f.Add("", "a=%zz")
	f.Add("xt=user%2F-%2Fstate%2Fcom.google%2Fread", "")
	f.Fuzz(func(t *testing.T, query, body string) {
		form, err := parseGreaderForm(query, body)
		if err != nil {
			return
		}
		for k, vs := range form {
			if len(vs) > maxFormItems {
				t.Fatalf("%s: %d values", k, len(vs))
			}
		}
	})
}

// FuzzGReaderRoles sends any route and form of the Google Reader API as
// the reader bob or the admin alice: nothing answers 5xx, a reader's
// request never changes a subscription, and no request makes a name or
// label that is no name, nor a feed allowed private addresses.
func FuzzGReaderRoles(f *testing.F) {
	f.Cleanup(catalog.SetTestIterations(1000))
	w := newWorld(f)
	ctx := context.Background()
	if err := w.cat.AddUser(ctx, "alice", "alice's password", catalog.RoleAdmin, t0); err != nil {
		f.Fatal(err)
	}
	if err := w.cat.AddUser(ctx, "bob", "bob's password!", catalog.RoleReader, t0); err != nil {
		f.Fatal(err)
	}
	auth := map[bool]string{}
	for admin, who := range map[bool][2]string{true: {"alice", "alice's password"}, false: {"bob", "bob's password!"}} {
		r := w.grLogin(who[0], who[1])
		_, a, ok := strings.Cut(string(r.body), "Auth=")
		if r.status != 200 || !ok {
			f.Fatalf("login %s: %d %s", who[0], r.status, r.body)
		}
		auth[admin] = strings.TrimSpace(a)
	}
	id := w.ids["TechCrunch.xml"]
	for _, seed := range []struct {
		route, form string
		admin       bool
	}{
		{"subscription/quickadd", "quickadd=https://example.org/feed.xml", false},
		{"subscription/quickadd", "quickadd=http://127.0.0.1/internal", true},
		{"subscription/edit", "ac=unsubscribe&s=feed/" + id, false},
		{"subscription/edit", "ac=edit&s=feed/" + id + "&t=%3Cb%3Ex%3C%2Fb%3E", true},
		{"subscription/edit", "ac=edit&s=feed/" + id + "&a=user/-/label/a%E2%80%AEb", true},
		{"subscription/edit", "ac=subscribe&s=feed/https://example.org/x&t=a%0D%0Ab", true},
		{"edit-tag", "i=1&a=user/-/state/com.google/read", false},
		{"mark-all-as-read", "s=user/-/state/com.google/reading-list", false},
		{"stream/contents/user%2F-%2Fstate%2Fcom.google%2Freading-list", "n=2", false},
		{"unread-count", "", true},
	} {
		f.Add(seed.route, seed.form, seed.admin)
	}
	snapshot := func(t *testing.T) string {
		subs, err := w.cat.Subscriptions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, s := range subs {
			fmt.Fprintf(&b, "%s %q %q %v\n", s.FeedID, s.Name, s.Labels, s.AllowPrivate)
		}
		return b.String()
	}
	f.Fuzz(func(t *testing.T, route, form string, admin bool) {
		r, err := http.NewRequest("POST", "http://127.0.0.1/reader/api/0/"+route, strings.NewReader(form))
		if err != nil {
			return
		}
		r.Header.Set("Authorization", "GoogleLogin auth="+auth[admin])
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		before := snapshot(t)
		rec := httptest.NewRecorder()
		w.s.ServeHTTP(rec, r)
		if rec.Code >= 500 {
			t.Fatalf("%s %q as admin %v: %d %s", route, form, admin, rec.Code, rec.Body)
		}
		after := snapshot(t)
		if !admin && after != before {
			t.Fatalf("%s %q: a reader changed the subscriptions:\n%s\nto\n%s", route, form, before, after)
		}
		subs, _ := w.cat.Subscriptions(ctx)
		for _, s := range subs {
			if s.AllowPrivate {
				t.Fatalf("%s %q made a feed allowed private addresses", route, form)
			}
			for _, name := range append([]string{s.Name}, s.Labels...) {
				if safetext.CheckName(name) != nil {
					t.Fatalf("%s %q made the name %q", route, form, name)
				}
			}
		}
	})
}
