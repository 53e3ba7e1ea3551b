package parse

import (
	"net/url"
	"strings"

	"golang.org/x/net/html"
)

// Relative URLs in the HTML of summaries and content are made absolute
// against the content's base (its xml:base, else the document's URL), so
// that the HTML means the same wherever it is shown. Absolute URLs and
// in-page anchors ("#note") are left as written.

// urlAttrs are the HTML attributes that hold a URL.
var urlAttrs = map[string]bool{
	"href": true, "src": true, "cite": true, "poster": true, "background": true, "longdesc": true,
	"usemap": true, "action": true, "codebase": true, "data": true, "profile": true, "classid": true,
}

// resolveRef makes ref absolute against base, unless it is absolute, an
// anchor, or not a URL.
func resolveRef(base *url.URL, ref string) string {
	if base == nil || !isRelative(ref) {
		return ref
	}
	r, err := url.Parse(strings.TrimSpace(ref))
	if err != nil {
		return ref
	}
	return base.ResolveReference(r).String()
}

// isRelative reports whether ref is a relative reference worth resolving.
func isRelative[T string | []byte](ref T) bool {
	i, j := 0, len(ref)
	for i < j && isSpaceByte(ref[i]) {
		i++
	}
	for j > i && isSpaceByte(ref[j-1]) {
		j--
	}
	if i == j || ref[i] == '#' {
		return false
	}
	// A scheme: letters, digits, "+", "-", "." before a colon.
	for k := i; k < j; k++ {
		c := ref[k]
		switch {
		case c == ':':
			return k == i
		case c|0x20 >= 'a' && c|0x20 <= 'z', k > i && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return true
		}
	}
	return true
}

// resolveHTML makes the relative URLs of an HTML fragment absolute. It
// looks for them first, and tokenizes the HTML only when there is one, so
// that content with absolute links costs a scan and nothing more.
func resolveHTML(s string, base *url.URL) string {
	if base == nil || !hasRelativeURL(s) {
		return s
	}
	z := html.NewTokenizer(strings.NewReader(s))
	var out strings.Builder
	out.Grow(len(s) + 64)
	var raw []byte
	type attr struct{ key, val []byte } // both point into the tokenizer's buffer
	var attrs []attr
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			out.Write(z.Raw())
			continue
		}
		// TagName and TagAttr rewrite the token in place: keep it first.
		raw = append(raw[:0], z.Raw()...)
		name, more := z.TagName()
		attrs = attrs[:0]
		relative := false
		for more {
			var k, v []byte
			k, v, more = z.TagAttr()
			attrs = append(attrs, attr{k, v})
			relative = relative || urlAttrs[string(k)] && isRelative(v)
		}
		if !relative {
			out.Write(raw)
			continue
		}
		out.WriteByte('<')
		out.Write(name)
		for _, a := range attrs {
			val := string(a.val)
			if urlAttrs[string(a.key)] {
				val = resolveRef(base, val)
			}
			out.WriteByte(' ')
			out.Write(a.key)
			out.WriteString(`="`)
			out.WriteString(html.EscapeString(val))
			out.WriteByte('"')
		}
		if tt == html.SelfClosingTagToken {
			out.WriteByte('/')
		}
		out.WriteByte('>')
	}
	return out.String()
}

// hasRelativeURL reports whether HTML may hold a relative URL in one of
// urlAttrs: an attribute of that name whose value has no scheme.
func hasRelativeURL(s string) bool {
	for i := 0; ; {
		j := strings.IndexByte(s[i:], '=')
		if j < 0 {
			return false
		}
		eq := i + j
		i = eq + 1
		// The name before the "=" (and any spaces).
		k := eq
		for k > 0 && s[k-1] == ' ' {
			k--
		}
		n := k
		for n > 0 && isAttrByte(s[n-1]) {
			n--
		}
		if n == k || k-n > 10 || n > 0 && !isSpaceByte(s[n-1]) || !urlAttrs[strings.ToLower(s[n:k])] {
			continue
		}
		// The value after it.
		v := eq + 1
		for v < len(s) && s[v] == ' ' {
			v++
		}
		if v < len(s) && (s[v] == '"' || s[v] == '\'') {
			v++
		}
		end := v
		for end < len(s) && end-v < 40 && s[end] != '"' && s[end] != '\'' && s[end] != '>' && s[end] != ' ' {
			end++
		}
		if isRelative(html.UnescapeString(s[v:end])) {
			return true
		}
	}
}

func isAttrByte(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
