package entrytext

import (
	"strings"
	"testing"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// TestTitle: an entry's title, else the start of its text (HTML made
// text), else "(untitled)": the rule of feed-serve's web page, which
// feed-read now follows.
func TestTitle(t *testing.T) {
	long := strings.Repeat("word ", 30)
	for _, tc := range []struct {
		e    ndjson.Entry
		want string
	}{
		{ndjson.Entry{Title: "  A title  ", Summary: "text"}, "A title"},
		{ndjson.Entry{Summary: "<p>Just a <b>note</b>, without a title.</p>"}, "Just a note, without a title."},
		{ndjson.Entry{Content: "<p>Only content</p>"}, "Only content"},
		{ndjson.Entry{Content: long}, strings.Repeat("word ", 16)[:79] + "…"},
		{ndjson.Entry{Title: " ", Summary: "<img src=x>"}, "(untitled)"},
	} {
		if got := Title(&tc.e); got != tc.want {
			t.Errorf("Title(%+v) = %q, want %q", tc.e, got, tc.want)
		}
	}
}
