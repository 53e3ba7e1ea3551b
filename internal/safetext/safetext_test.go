package safetext

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStripControls(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain", "plain"},
		{"", ""},
		{"a\x00b\x07c\x1b[31md", "abc[31md"},
		{"keeps\ttab\nline\r\n", "keeps\ttab\nline\r\n"},
		{"del\x7f, c1 \u009b2J", "del, c1 2J"},
		{"caf\u00e9 \u202eevil", "caf\u00e9 \u202eevil"}, // bidi: isolated where shown, not stripped
		{"\x00\x01\x02", ""},
	} {
		if got := StripControls(c.in); got != c.want {
			t.Errorf("StripControls(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTerminal(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain caf\u00e9", "plain caf\u00e9"},
		{"\x1b]0;pwned\x07title", `\x1b]0;pwned\x07title`},
		{"rtl \u202eevil\u202c", `rtl \u202eevil\u202c`},
		{"two\nlines\tand\rcr", `two\nlines\tand\rcr`},
		{"c1 \u009b31m", `c1 \u009b31m`},
		{"bad \xff utf8", `bad \xff utf8`},
		{"nul\x00", `nul\x00`},
	} {
		if got := Terminal(c.in); got != c.want {
			t.Errorf("Terminal(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"News", "caf\u00e9 & cr\u00e8me", "\u05d7\u05d3\u05e9\u05d5\u05ea", "a/b", "x: y (z)"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"a\r\nSet-Cookie: x", "<script>alert(1)</script>", "evil\u202egnp.exe", "tab\there", "nul\x00", "esc\x1b[2J", "\xff", "iso\u2066late", "x > y"} {
		if err := CheckName(bad); !errors.Is(err, ErrName) {
			t.Errorf("CheckName(%q): %v, want ErrName", bad, err)
		}
	}
}

func FuzzTerminal(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[31m", "\u202e", "\xff\xfe", "a\u009bb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Terminal(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Terminal(%q) = %q: not UTF-8", s, out)
		}
		for _, r := range out {
			if isControl(r) || IsBidiControl(r) || r == '\n' || r == '\t' || r == '\r' {
				t.Fatalf("Terminal(%q) = %q: %U left", s, out, r)
			}
		}
		if StripControls(s) == s && !strings.ContainsAny(s, "\t\n\r\\") && utf8.ValidString(s) && !strings.ContainsFunc(s, IsBidiControl) && out != s {
			t.Fatalf("Terminal(%q) changed clean text: %q", s, out)
		}
		if c := StripControls(s); strings.ContainsFunc(c, isControl) {
			t.Fatalf("StripControls(%q) = %q", s, c)
		}
	})
}

func TestCell(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"  two \n lines ", 10, "two lines"},
		{"", 5, "-"},
		{"abcdefgh", 5, "abcd…"},
		{"\x1b[2Jname", 30, `\x1b[2Jname`},
		{"evil\u202eexe", 30, `evil\u202eexe`},
	} {
		if got := Cell(c.in, c.n); got != c.want {
			t.Errorf("Cell(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
