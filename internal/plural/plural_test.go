package plural

import "testing"

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n           int
		word, count string
	}{{0, "entries", "0 entries"}, {1, "entry", "1 entry"}, {2, "entries", "2 entries"}, {-1, "entries", "-1 entries"}} {
		if w := Word(c.n, "entry", "entries"); w != c.word {
			t.Errorf("Word(%d) = %q", c.n, w)
		}
		if s := Count(c.n, "entry", "entries"); s != c.count {
			t.Errorf("Count(%d) = %q", c.n, s)
		}
	}
}
