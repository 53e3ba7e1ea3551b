package dedup

import (
	"bytes"
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/testenv"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

func linked(feed, uid, link string) string {
	b, _ := ndjson.Marshal(ndjson.Entry{Header: ndjson.Head(ndjson.TypeEntry), FeedID: testids.Feed(feed), EntryUID: testids.UID(uid), ContentHash: "h", CanonicalLink: link})
	return string(b)
}

// TestCrossFeed: with --cross-feed, a new entry whose canonical link was
// stored first from another feed becomes an alias of that entry; one the
// store recorded as an alias stays one, with the flag or without.
func TestCrossFeed(t *testing.T) {
	const link = "https://example.org/post/1"
	// Stored already, in every case: A/a1 with link, and B/b9 recorded as
	// its alias.
	tests := []struct {
		name, in string
		cross    bool
		want     string // feed/uid:status>alias_of ... then the dedup counts n/u/c/a
	}{
		{"without the flag: new", linked("B", "b1", link) + fetch("B", "G", true), false, "B/b1:new G:1/0/0/0"},
		{"known link of another feed: alias", linked("B", "b1", link) + fetch("B", "G", true), true, "B/b1:alias>A/a1 G:0/0/0/1"},
		{"http/https flip is the same link", linked("B", "b1", "http://EXAMPLE.org/post/1") + fetch("B", "G", true), true, "B/b1:alias>A/a1 G:0/0/0/1"},
		{"alias recorded already: dropped", linked("B", "b9", link) + fetch("B", "G", true), true, "G:0/0/1/0"},
		{"alias recorded already, without the flag (a replay, a reparse): dropped", linked("B", "b9", link) + fetch("B", "G", true), false, "G:0/0/1/0"},
		{"own feed's link under a new uid: new", linked("A", "a7", link) + fetch("A", "F", true), true, "A/a7:new F:1/0/0/0"},
		{"unknown link: new", linked("B", "b1", "https://example.org/other") + fetch("B", "G", true), true, "B/b1:new G:1/0/0/0"},
		{"no link: new", linked("B", "b1", "") + fetch("B", "G", true), true, "B/b1:new G:1/0/0/0"},
		{"two feeds with one new link in one run", linked("C", "c1", "https://x.test/a") + linked("D", "d1", "https://x.test/a") + fetch("D", "H", true),
			true, "C/c1:new D/d1:alias>C/c1 H:0/0/0/1"},
		// New entries wait for their links to be read in one query
		// (deduper.flush): the order, the repeats and the counts stay
		// those of judging each in turn.
		{"a repeat of a new entry with a link, in one fetch", linked("B", "b1", link) + linked("B", "b1", link) + fetch("B", "G", true),
			true, "B/b1:alias>A/a1 G:0/0/1/1"},
		{"a repeat of an alias recorded already", linked("B", "b9", link) + linked("B", "b9", link) + fetch("B", "G", true),
			true, "G:0/0/2/0"},
		{"queued entries keep their order among others", linked("C", "c1", "https://x.test/a") + linked("C", "c2", "") + "{\"type\":\"unknown\",\"v\":1}\n" +
			linked("C", "c3", "https://x.test/b") + fetch("C", "H", true), true, "C/c1:new C/c2:new unknown C/c3:new H:3/0/0/0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a1 := ndjson.EntryRef{FeedID: testids.Feed("A"), EntryUID: testids.UID("a1")}
			st, cat := testenv.Store(t)
			if _, err := cat.KeepLinks(context.Background()); err != nil { // as the first --cross-feed run did
				t.Fatal(err)
			}
			err := cat.Update(context.Background(), func(tx *catalog.Tx) error {
				h, _ := catalog.LinkHash(link)
				if err := tx.AddLink(h, a1); err != nil {
					return err
				}
				return tx.AddAlias(&ndjson.Alias{FeedID: testids.Feed("B"), EntryUID: testids.UID("b9"), CanonicalLink: link, AliasOf: a1}, "2026-11-21")
			})
			if err != nil {
				t.Fatal(err)
			}
			before, _ := cat.Sizes(context.Background())
			var out bytes.Buffer
			err = Run(context.Background(), Config{In: strings.NewReader(tt.in), Out: ndjson.NewWriter(&out), Store: st, CrossFeed: tt.cross})
			if err != nil {
				t.Fatal(err)
			}
			if got := crossSummary(t, out.Bytes()); got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
			if after, _ := cat.Sizes(context.Background()); !maps.Equal(after, before) {
				t.Fatalf("feed-dedup wrote the catalog: %v, was %v", after, before)
			}
		})
	}
}

func crossSummary(t *testing.T, out []byte) string {
	t.Helper()
	var got []string
	rd := ndjson.NewReader(bytes.NewReader(out))
	for {
		line, err := rd.Next()
		if err != nil {
			break
		}
		switch line.Type {
		case ndjson.TypeEntry:
			var e ndjson.Entry
			line.Decode(&e)
			s := testids.Name(e.FeedID) + "/" + testids.Name(e.EntryUID) + ":" + e.Status
			if e.AliasOf != nil {
				s += ">" + testids.Name(e.AliasOf.FeedID) + "/" + testids.Name(e.AliasOf.EntryUID)
			}
			got = append(got, s)
		case ndjson.TypeFetch:
			var f ndjson.Fetch
			line.Decode(&f)
			d := f.Dedup
			got = append(got, testids.Name(f.FetchID)+":"+strings.Join([]string{itoa(d.New), itoa(d.Updated), itoa(d.Unchanged), itoa(d.Aliases)}, "/"))
		default:
			got = append(got, line.Type)
		}
	}
	return strings.Join(got, " ")
}

func itoa(n int) string { return string(rune('0' + n)) }
