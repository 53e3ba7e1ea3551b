package serve

import "testing"

// TestSanitise: what feed HTML keeps and loses.
func TestSanitise(t *testing.T) {
	for _, c := range []struct{ in, base, want string }{
		{`<p>hi <b>there</b></p>`, "", `<p>hi <b>there</b></p>`},
		{`<script>alert(1)</script>x`, "", `x`},
		{`<img src="a.png" onerror="alert(1)">`, "https://e.example/post/1", `<img src="https://e.example/post/a.png"/>`},
		{`<img src="a.png">`, "", ``},
		{`<a href="javascript:alert(1)">x</a>`, "https://e.example/", `x`},
		{`<a href="/p">x</a>`, "https://e.example/a/b", `<a href="https://e.example/p" rel="nofollow noreferrer noopener" target="_blank">x</a>`},
		{`<a href="https://o.example/">x</a>`, "", `<a href="https://o.example/" rel="nofollow noreferrer noopener" target="_blank">x</a>`},
		{`<div style="color:red" onclick="x()">y</div>`, "", `<div>y</div>`},
		{`<iframe src="https://e.example/"></iframe><form><input></form>`, "", ``},
		{"", "", ""},
	} {
		if got := string(sanitise(c.in, c.base)); got != c.want {
			t.Errorf("sanitise(%q, %q) = %q, want %q", c.in, c.base, got, c.want)
		}
	}
}
