package ids

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/cespare/xxhash/v2"
)

func TestFeedIDIsStableUUIDv5(t *testing.T) {
	a := FeedID("https://example.org/feed.xml")
	if a != FeedID("https://example.org/feed.xml") {
		t.Fatal("FeedID is not deterministic")
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(a) {
		t.Fatalf("FeedID %q is not a UUIDv5", a)
	}
	if a == FeedID("https://example.org/other.xml") {
		t.Fatal("two URLs share a feed id")
	}
	// Python's uuid.uuid5(uuid.NAMESPACE_URL, url) agrees.
	if a != "72a9341a-22c1-51c1-90ae-1f27d56c5b92" {
		t.Fatalf("FeedID = %q, want the standard UUIDv5", a)
	}
}

var pub = time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)

func TestEntryUID(t *testing.T) {
	base := EntryKey{FeedID: "f1", NativeID: "tag:example.org,2026:1", Link: "https://example.org/1", Title: "One", Published: pub}
	with := func(change func(*EntryKey)) EntryKey { k := base; change(&k); return k }
	for _, tc := range []struct {
		name string
		a, b EntryKey
		same bool
	}{
		{"native id wins over title change", base, with(func(k *EntryKey) { k.Title = "One (updated)" }), true},
		{"native id wins over date change", base, with(func(k *EntryKey) { k.Published = pub.Add(time.Hour) }), true},
		{"http/https flip in guid", with(func(k *EntryKey) { k.NativeID = "http://example.org/?p=1" }), with(func(k *EntryKey) { k.NativeID = "https://example.org/?p=1" }), true},
		{"guid host case", with(func(k *EntryKey) { k.NativeID = "http://Example.org/p/1" }), with(func(k *EntryKey) { k.NativeID = "http://example.org/p/1" }), true},
		{"different native ids", base, with(func(k *EntryKey) { k.NativeID = "tag:example.org,2026:2" }), false},
		{"same native id in another feed", base, with(func(k *EntryKey) { k.FeedID = "f2" }), false},
		{"shared guid falls back to link", with(func(k *EntryKey) { k.NativeIDShared = true }), with(func(k *EntryKey) { k.NativeIDShared = true; k.Link = "https://example.org/2" }), false},
		{"shared guid, same tuple", with(func(k *EntryKey) { k.NativeIDShared = true; k.NativeID = "x" }), with(func(k *EntryKey) { k.NativeIDShared = true; k.NativeID = "y" }), true},
		{"no guid: title whitespace does not matter", with(func(k *EntryKey) { k.NativeID = "" }), with(func(k *EntryKey) { k.NativeID = ""; k.Title = "  One \n" }), true},
		{"no guid: link scheme flip", with(func(k *EntryKey) { k.NativeID = "" }), with(func(k *EntryKey) { k.NativeID = ""; k.Link = "http://example.org/1" }), true},
		{"no guid: date matters", with(func(k *EntryKey) { k.NativeID = "" }), with(func(k *EntryKey) { k.NativeID = ""; k.Published = pub.Add(time.Second) }), false},
		{"no guid, no date: stable", with(func(k *EntryKey) { k.NativeID = ""; k.Published = time.Time{} }), with(func(k *EntryKey) { k.NativeID = ""; k.Published = time.Time{} }), true},
		{"nothing but a body: bodies tell apart", EntryKey{FeedID: "f", Body: "first"}, EntryKey{FeedID: "f", Body: "second"}, false},
		{"body ignored when a title exists", EntryKey{FeedID: "f", Title: "t", Body: "first"}, EntryKey{FeedID: "f", Title: "t", Body: "second"}, true},
		{"fields do not run together", EntryKey{FeedID: "f", Title: "ab", Link: ""}, EntryKey{FeedID: "fa", Title: "b"}, false},
	} {
		a, b := EntryUID(tc.a), EntryUID(tc.b)
		if (a == b) != tc.same {
			t.Errorf("%s: uids %s and %s, want same=%v", tc.name, a, b, tc.same)
		}
		if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(a) {
			t.Errorf("%s: uid %q is not 16 hex digits", tc.name, a)
		}
	}
}

func TestContentHash(t *testing.T) {
	a := ContentHash("T", "S", "C", []string{"https://example.org/1"})
	if a != ContentHash(" T ", "S\n", "C", []string{"https://example.org/1"}) {
		t.Error("whitespace changed the hash")
	}
	for _, b := range []string{
		ContentHash("T2", "S", "C", []string{"https://example.org/1"}),
		ContentHash("T", "S", "C2", []string{"https://example.org/1"}),
		ContentHash("T", "S", "C", []string{"https://example.org/2"}),
		ContentHash("TS", "", "C", []string{"https://example.org/1"}),
	} {
		if a == b {
			t.Errorf("a change kept hash %s", a)
		}
	}
}

func TestFetchIDIsUUIDv7InTimeOrder(t *testing.T) {
	rnd := bytes.NewReader(bytes.Repeat([]byte{0xff}, 100))
	a, err := FetchID(pub, rnd)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := FetchID(pub.Add(time.Millisecond), rnd)
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(a) {
		t.Fatalf("%q is not a UUIDv7", a)
	}
	if !(a < b) {
		t.Errorf("ids not in time order: %s then %s", a, b)
	}
	// The first 48 bits are the Unix time in milliseconds.
	if want := fmt.Sprintf("%012x", pub.UnixMilli()); strings.ReplaceAll(a, "-", "")[:12] != want {
		t.Errorf("%s does not start with the time %s", a, want)
	}
	if _, err := FetchID(pub, bytes.NewReader(nil)); err == nil {
		t.Error("no error from an empty random source")
	}
}

// collapseRef is CollapseSpace as first written; the hashes depend on its
// output, byte for byte.
func collapseRef(s string) string { return strings.Join(strings.Fields(s), " ") }

var collapseCases = []string{
	"", " ", "a", " a ", "a b", "a  b", "a\tb", "a \nb", "\u00a0a\u00a0b\u00a0", "a\u2003b", "a\u0085b",
	"a b c d", "a b  c d ", "  lead", "trail  ", "a\xffb", "\xff \xfe", "a\u200bb", "é à ü", "x\r\ny",
	"one two\tthree\n\nfour \u3000five", "a \u00a0b", "\v\f", "  \t  ",
}

// TestCollapseSpace checks CollapseSpace and the appending of
// ContentHash against the first definition.
func TestCollapseSpace(t *testing.T) {
	for _, s := range collapseCases {
		want := collapseRef(s)
		if got := CollapseSpace(s); got != want {
			t.Errorf("CollapseSpace(%q) = %q, want %q", s, got, want)
		}
		if got := string(appendCollapsed([]byte("x"), s)); got != "x"+want {
			t.Errorf("appendCollapsed(x, %q) = %q, want x%q", s, got, want)
		}
	}
}

// contentHashRef is ContentHash as first written.
func contentHashRef(title, summary, content string, links []string) string {
	h := xxhash.New()
	for _, s := range []string{title, summary, content} {
		h.WriteString(collapseRef(s))
		h.Write([]byte{0})
	}
	for _, l := range links {
		h.WriteString(strings.TrimSpace(l))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// TestContentHashUnchanged pins ContentHash to its first definition: a
// faster one must give every stored hash again.
func TestContentHashUnchanged(t *testing.T) {
	ref := contentHashRef
	for i, s := range collapseCases {
		title, summary := s, collapseCases[(i+1)%len(collapseCases)]
		links := []string{" https://example.org/" + s}
		if got, want := ContentHash(title, summary, s+s, links), ref(title, summary, s+s, links); got != want {
			t.Errorf("ContentHash(%q, %q, ...) = %s, want %s", title, summary, got, want)
		}
	}
	if got, want := ContentHash("T", "", "", nil), ref("T", "", "", nil); got != want {
		t.Errorf("ContentHash = %s, want %s", got, want)
	}
}

// TestSpaceLeadBytes checks what spaceAt relies on: every non-ASCII
// white space rune is led by one of the bytes it looks for.
func TestSpaceLeadBytes(t *testing.T) {
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if !unicode.IsSpace(r) {
			continue
		}
		s := string(r)
		if spaceAt(s, 0) != len(s) {
			t.Errorf("U+%04X (% x) is white space, but spaceAt misses it", r, s)
		}
	}
}

func FuzzCollapseSpace(f *testing.F) {
	for _, s := range collapseCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := collapseRef(s)
		if got := CollapseSpace(s); got != want {
			t.Fatalf("CollapseSpace(%q) = %q, want %q", s, got, want)
		}
		if got := string(appendCollapsed([]byte("x"), s)); got != "x"+want {
			t.Fatalf("appendCollapsed(x, %q) = %q, want x%q", s, got, want)
		}
	})
}

// TestCollapseRandom compares appendCollapsed with the first definition
// on random texts of the pieces its eight-byte steps and byte loop tell
// apart, at every alignment.
func TestCollapseRandom(t *testing.T) {
	pieces := []string{"a", "b", " ", " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u0085", "é", "ニ", "数", "\u3000", "\u2003", "\u2028", "\u202f", "\u205f", "\u1680", "\u200b", "\xe2", "\xc2", "\xe3\x80", "\xff", "word", "longer words"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		var b strings.Builder
		for n := r.IntN(30); n > 0; n-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		s := b.String()
		if got, want := string(appendCollapsed(nil, s)), collapseRef(s); got != want {
			t.Fatalf("appendCollapsed(%q) = %q, want %q", s, got, want)
		}
	}
}

// FuzzContentHash holds ContentHash to its first definition.
func FuzzContentHash(f *testing.F) {
	for i, s := range collapseCases {
		f.Add(s, collapseCases[(i+1)%len(collapseCases)], s+s, " https://example.org/"+s)
	}
	f.Fuzz(func(t *testing.T, title, summary, content, link string) {
		if got, want := ContentHash(title, summary, content, []string{link, title}), contentHashRef(title, summary, content, []string{link, title}); got != want {
			t.Errorf("ContentHash(%q, %q, %q, %q) = %s, want %s", title, summary, content, link, got, want)
		}
	})
}
