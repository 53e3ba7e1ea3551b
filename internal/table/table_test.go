package table

import (
	"bytes"
	"strings"
	"testing"
)

// TestWrite: columns padded to their widest cell, numbers on the right;
// to fit a width, the column longest beyond its minimum is cut first, a
// URL in its middle; wide characters count two columns.
func TestWrite(t *testing.T) {
	rows := [][]string{
		{"ID", "NAME", "N", "URL"},
		{"a1", "A feed with a long name", "12", "https://example.org/some/long/path/feed.xml"},
		{"b2", "短い名前", "3", "https://b.example/f"},
	}
	cols := []Col{{}, {Min: 8}, {Right: true}, {Min: 20, Middle: true}}
	var out bytes.Buffer
	if err := Write(&out, rows, cols, 0); err != nil {
		t.Fatal(err)
	}
	want := `ID  NAME                      N  URL
a1  A feed with a long name  12  https://example.org/some/long/path/feed.xml
b2  短い名前                  3  https://b.example/f
`
	if out.String() != want {
		t.Errorf("no width:\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	Write(&out, rows, cols, 50)
	want = `ID  NAME             N  URL
a1  A feed with a…  12  https://exam…path/feed.xml
b2  短い名前         3  https://b.example/f
`
	if out.String() != want {
		t.Errorf("width 50:\n%s\nwant\n%s", out.String(), want)
	}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if w := Width(l); w > 50 {
			t.Errorf("%d columns: %q", w, l)
		}
	}
	// Past the minimums, the lines are as narrow as they get.
	out.Reset()
	Write(&out, rows, cols, 10)
	if !strings.Contains(out.String(), "A feed …") {
		t.Errorf("width 10:\n%s", out.String())
	}
}
