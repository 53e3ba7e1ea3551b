package urlnorm

import (
	"slices"
	"testing"
)

func TestTrackingStrip(t *testing.T) {
	def := NewTracking(DefaultTrackingParams)
	tests := []struct {
		in, want string
	}{
		{"https://example.org/a", "https://example.org/a"},
		{"https://example.org/a?id=1", "https://example.org/a?id=1"},
		{"https://example.org/a?utm_source=feed", "https://example.org/a"},
		{"https://example.org/a?utm_source=feed&utm_medium=rss&utm_campaign=x", "https://example.org/a"},
		{"https://example.org/a?id=1&utm_source=feed", "https://example.org/a?id=1"},
		{"https://example.org/a?utm_source=feed&id=1", "https://example.org/a?id=1"},
		{"https://example.org/a?b=2&utm_term=x&a=1", "https://example.org/a?b=2&a=1"},
		{"https://example.org/a?UTM_Source=feed&x=%20y", "https://example.org/a?x=%20y"},
		{"https://example.org/a?utm%5Fsource=feed", "https://example.org/a"},
		{"https://example.org/a?fbclid=abc", "https://example.org/a"},
		{"https://example.org/a?gclid=abc&mc_cid=1&mc_eid=2", "https://example.org/a"},
		{"https://example.org/a?utm_source=x#frag", "https://example.org/a#frag"},
		{"https://example.org/a?x=1&utm_source=x#frag", "https://example.org/a?x=1#frag"},
		{"https://example.org/a?utm", "https://example.org/a?utm"},
		{"https://example.org/a?source=rss&ref=feed&ncid=rss", "https://example.org/a?source=rss&ref=feed&ncid=rss"},
		{"https://example.org/a?&&utm_source=x", "https://example.org/a"},
		{"https://example.org/a?", "https://example.org/a?"},
		{"https://example.org/a?x=1&&y=2", "https://example.org/a?x=1&&y=2"},
	}
	for _, tt := range tests {
		if got := def.Strip(tt.in); got != tt.want {
			t.Errorf("Strip(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var none *Tracking
	if got := none.Strip("https://example.org/a?utm_source=x"); got != "https://example.org/a?utm_source=x" {
		t.Errorf("nil Tracking stripped: %q", got)
	}
	extra := NewTracking(append(slices.Clone(DefaultTrackingParams), "ncid", "ref_*", "*", ""))
	if got := extra.Strip("https://example.org/a?ncid=rss&ref_src=x&id=1"); got != "https://example.org/a?id=1" {
		t.Errorf("extended Strip = %q", got)
	}
	if p := NewTracking([]string{"B", "a*", " c "}).Params(); !slices.Equal(p, []string{"a*", "b", "c"}) {
		t.Errorf("Params = %q", p)
	}
}
