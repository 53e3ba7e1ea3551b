package parse

import (
	"bytes"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// Relative URLs in the HTML of summaries and content are made absolute
// against the content's base (its xml:base, else the document's URL), so
// that the HTML means the same wherever it is shown. Absolute URLs and
// in-page anchors ("#note") are left as written, but for the white space
// around them, which goes. The same pass escapes a "<!" that begins no
// comment, CDATA section or doctype.

// urlAttrs are the HTML attributes that hold a URL.
var urlAttrs = map[string]bool{
	"href": true, "src": true, "cite": true, "poster": true, "background": true, "longdesc": true,
	"usemap": true, "action": true, "codebase": true, "data": true, "profile": true, "classid": true,
}

// resolveRef trims the white space around ref, and makes it absolute
// against base unless it is absolute, an anchor, or not a URL.
func resolveRef(base *url.URL, ref string) string {
	ref = strings.TrimFunc(ref, isSpaceRune)
	if base == nil || !isRelative(ref) {
		return ref
	}
	if plainAbsolutePath(ref) && plainBase(base) {
		// What net/url makes of it, without its parses.
		return base.Scheme + "://" + base.Host + ref
	}
	r, err := url.Parse(ref)
	if err != nil {
		return ref
	}
	return base.ResolveReference(r).String()
}

// plainAbsolutePath reports whether ref is a path from the root that
// resolves to itself: "/" and bytes a path keeps as they are, no "//"
// at its start, no "." or ".." segment, no query or fragment.
func plainAbsolutePath(ref string) bool {
	if len(ref) < 2 || ref[0] != '/' || ref[1] == '/' {
		return false
	}
	for i := 0; i < len(ref); i++ {
		if !plainPathByte[ref[i]] {
			return false
		}
		if ref[i] == '.' && ref[i-1] == '/' && (i+1 == len(ref) || ref[i+1] == '/' || ref[i+1] == '.' && (i+2 == len(ref) || ref[i+2] == '/')) {
			return false
		}
	}
	return true
}

// plainBase reports whether base is an http(s) URL whose scheme and host
// net/url writes as they are.
func plainBase(base *url.URL) bool {
	if base.Scheme != "http" && base.Scheme != "https" || base.User != nil || base.Opaque != "" || base.Host == "" {
		return false
	}
	for i := 0; i < len(base.Host); i++ {
		if c := base.Host[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func isSpaceRune(r rune) bool { return r < utf8.RuneSelf && isSpaceByte(byte(r)) }

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
	if base == nil || !hasRelativeURL(s) && !hasBareBang(s) {
		return s
	}
	if out, ok := resolvePlainHTML(s, base); ok {
		return out
	}
	return resolveHTMLTokens(s, base)
}

// resolveHTMLTokens is resolveHTML through x/net/html's tokenizer, for
// any HTML.
func resolveHTMLTokens(s string, base *url.URL) string {
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
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
		case html.CommentToken, html.TextToken:
			writeBangEscaped(&out, z.Raw(), tt == html.CommentToken)
			continue
		default:
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
			relative = relative || urlAttrs[string(k)] && (isRelative(v) || isSpaced(v))
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
		if v < len(s) && isSpaceByte(s[v]) {
			return true // white space to trim
		}
		end := v
		for end < len(s) && end-v < 40 && s[end] != '"' && s[end] != '\'' && s[end] != '>' && !isSpaceByte(s[end]) {
			end++
		}
		if isRelative(html.UnescapeString(s[v:end])) {
			return true
		}
		if q := s[v-1]; (q == '"' || q == '\'') && end < len(s) && s[end] != q {
			// A long value: white space before its closing quote?
			if c := strings.IndexByte(s[end:], q); c > 0 && isSpaceByte(s[end+c-1]) {
				return true
			}
		}
	}
}

// isSpaced reports whether an attribute value has white space around it.
func isSpaced(v []byte) bool {
	return len(v) > 0 && (isSpaceByte(v[0]) || isSpaceByte(v[len(v)-1]))
}

// hasBareBang reports whether HTML holds a "<!" that begins no comment,
// CDATA section or doctype.
func hasBareBang(s string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], "<!")
		if j < 0 {
			return false
		}
		i += j + 2
		if !markupDecl(s[i:]) {
			return true
		}
	}
}

// markupDecl reports whether what follows a "<!" makes it a comment, a
// CDATA section or a doctype.
func markupDecl[T string | []byte](rest T) bool {
	return strings.HasPrefix(string(rest), "--") || strings.HasPrefix(string(rest), "[CDATA[") ||
		len(rest) >= 7 && strings.EqualFold(string(rest[:7]), "doctype")
}

// writeBangEscaped writes raw HTML text or a comment with each "<!" that
// begins no comment, CDATA section or doctype escaped: the tokenizer
// reads "<!x>" as a comment, which a sanitizer or another parser may
// read otherwise.
func writeBangEscaped(out *strings.Builder, raw []byte, comment bool) {
	if comment && len(raw) >= 2 && raw[0] == '<' && raw[1] == '!' && markupDecl(raw[2:]) || !bytes.Contains(raw, []byte("<!")) {
		out.Write(raw)
		return
	}
	for {
		i := bytes.Index(raw, []byte("<!"))
		if i < 0 {
			out.Write(raw)
			return
		}
		out.Write(raw[:i])
		if markupDecl(raw[i+2:]) && !comment {
			out.WriteString("<!")
		} else {
			out.WriteString("&lt;!")
		}
		raw = raw[i+2:]
	}
}

func isAttrByte(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// resolvePlainHTML is resolveHTMLTokens for the plain HTML feeds mostly
// carry, a fifth of feed-parse's time spared: text, and tags whose
// attribute values are quoted and hold no reference but &amp;, &lt;,
// &gt;, &quot; and &#39;. The output is the same, byte for byte
// (FuzzResolveHTML holds it to it). ok is false for anything else (a
// comment, a script, a "<!", an unquoted value), which the tokenizer
// reads.
func resolvePlainHTML(s string, base *url.URL) (_ string, ok bool) {
	// (Three searches for one byte each, which the library does many
	// bytes at a time, cost less than one for any of three.)
	if strings.IndexByte(s, 0) >= 0 || strings.IndexByte(s, '\r') >= 0 || strings.IndexByte(s, '\f') >= 0 {
		return "", false
	}
	var out strings.Builder // empty until a tag is rewritten
	last := 0               // s[last:] is not in out yet
	var attrs []plainAttr
	for i := 0; ; {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 || i+j+1 >= len(s) {
			break
		}
		lt := i + j
		switch c := s[lt+1]; {
		case isAttrByte(c):
			var end int
			var rewrite, selfClosing bool
			attrs, end, rewrite, selfClosing, ok = plainStartTag(s, lt, attrs[:0])
			if !ok {
				return "", false
			}
			if rewrite {
				if last == 0 {
					out.Grow(len(s) + 64)
				}
				out.WriteString(s[last:lt])
				writePlainTag(&out, s[lt+1:lt+1+tagNameLen(s[lt+1:])], attrs, selfClosing, base)
				last = end
			}
			i = end
		case c == '/':
			// An end tag: a name and ">", as written.
			k := lt + 2
			if k >= len(s) || !isAttrByte(s[k]) {
				return "", false
			}
			k += tagNameLen(s[k:])
			for k < len(s) && isHTMLSpace(s[k]) {
				k++
			}
			if k >= len(s) || s[k] != '>' {
				return "", false
			}
			i = k + 1
		case c == '!' || c == '?':
			return "", false
		default:
			i = lt + 1 // "<" and not a tag: text
		}
	}
	if last == 0 {
		return s, true
	}
	out.WriteString(s[last:])
	return out.String(), true
}

type plainAttr struct{ key, val string }

// plainStartTag reads the start tag at s[lt] if it is plain: a name of
// letters, digits and ":-_.", that is not one whose content HTML reads
// as raw text, and attributes separated by white space, each a name of
// such characters, alone or with a quoted value. end is where the tag
// ends; rewrite says that a URL attribute needs resolving or trimming.
func plainStartTag(s string, lt int, attrs []plainAttr) (_ []plainAttr, end int, rewrite, selfClosing, ok bool) {
	k := lt + 1
	n := tagNameLen(s[k:])
	if k+n >= len(s) || rawTextElement(s[k:k+n]) || !isHTMLSpace(s[k+n]) && s[k+n] != '>' && s[k+n] != '/' {
		return attrs, 0, false, false, false
	}
	k += n
	for {
		spaced := k < len(s) && isHTMLSpace(s[k])
		for k < len(s) && isHTMLSpace(s[k]) {
			k++
		}
		switch {
		case k >= len(s):
			return attrs, 0, false, false, false
		case s[k] == '>':
			return attrs, k + 1, rewrite, false, true
		case s[k] == '/':
			if k+1 < len(s) && s[k+1] == '>' {
				return attrs, k + 2, rewrite, true, true
			}
			return attrs, 0, false, false, false
		case !spaced || !isAttrByte(s[k]):
			return attrs, 0, false, false, false
		}
		start := k
		k += tagNameLen(s[k:])
		a := plainAttr{key: s[start:k]}
		if k < len(s) && s[k] == '=' {
			k++
			if k >= len(s) || s[k] != '"' && s[k] != '\'' {
				return attrs, 0, false, false, false
			}
			q := strings.IndexByte(s[k+1:], s[k])
			if q < 0 {
				return attrs, 0, false, false, false
			}
			a.val = s[k+1 : k+1+q]
			k += q + 2
			if k < len(s) && !isHTMLSpace(s[k]) && s[k] != '>' && s[k] != '/' {
				return attrs, 0, false, false, false
			}
			var plain bool
			if a.val, plain = unescapePlain(a.val); !plain {
				return attrs, 0, false, false, false
			}
		}
		if repeated(attrs, a.key) {
			continue // the tokenizer keeps the first of the same name
		}
		if urlAttrs[strings.ToLower(a.key)] && (isRelative(a.val) || isSpaced([]byte(a.val))) {
			rewrite = true
		}
		attrs = append(attrs, a)
	}
}

// repeated reports whether one of attrs has the name key, in any case.
func repeated(attrs []plainAttr, key string) bool {
	for _, a := range attrs {
		if strings.EqualFold(a.key, key) {
			return true
		}
	}
	return false
}

// writePlainTag writes a start tag as resolveHTMLTokens rewrites one:
// names lower-cased, URL attributes resolved, every value quoted and
// escaped.
func writePlainTag(out *strings.Builder, name string, attrs []plainAttr, selfClosing bool, base *url.URL) {
	out.WriteByte('<')
	out.WriteString(strings.ToLower(name))
	for _, a := range attrs {
		key := strings.ToLower(a.key)
		out.WriteByte(' ')
		out.WriteString(key)
		out.WriteString(`="`)
		switch val := a.val; {
		case urlAttrs[key] && plainAbsolutePath(val) && plainBase(base):
			// resolveRef's join, written as it is: none of its bytes
			// is one EscapeString escapes.
			out.WriteString(base.Scheme)
			out.WriteString("://")
			out.WriteString(base.Host)
			out.WriteString(val)
		case urlAttrs[key]:
			out.WriteString(html.EscapeString(resolveRef(base, val)))
		default:
			out.WriteString(html.EscapeString(val))
		}
		out.WriteByte('"')
	}
	if selfClosing {
		out.WriteByte('/')
	}
	out.WriteByte('>')
}

// tagNameLen is the length of the name at the start of s: letters,
// digits and ":-_.".
func tagNameLen(s string) int {
	n := 0
	for n < len(s) && (isAttrByte(s[n]) || s[n] >= '0' && s[n] <= '9' || s[n] == ':' || s[n] == '-' || s[n] == '_' || s[n] == '.') {
		n++
	}
	return n
}

// rawTextElement reports whether HTML reads the content of an element
// as text up to its end tag (script, style, title, ...).
func rawTextElement(name string) bool {
	switch strings.ToLower(name) {
	case "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript", "plaintext":
		return true
	}
	return false
}

func isHTMLSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }

// unescapePlain unescapes a value whose only references are &amp;, &lt;,
// &gt;, &quot; and &#39; (plain is false for any other "&"): those read
// the same in an attribute as in text.
func unescapePlain(v string) (_ string, plain bool) {
	i := strings.IndexByte(v, '&')
	if i < 0 {
		return v, true
	}
	var b strings.Builder
	b.Grow(len(v))
	for i >= 0 {
		b.WriteString(v[:i])
		v = v[i:]
		switch {
		case strings.HasPrefix(v, "&amp;"):
			b.WriteByte('&')
			v = v[5:]
		case strings.HasPrefix(v, "&lt;"):
			b.WriteByte('<')
			v = v[4:]
		case strings.HasPrefix(v, "&gt;"):
			b.WriteByte('>')
			v = v[4:]
		case strings.HasPrefix(v, "&quot;"):
			b.WriteByte('"')
			v = v[6:]
		case strings.HasPrefix(v, "&#39;"):
			b.WriteByte('\'')
			v = v[5:]
		default:
			return "", false
		}
		i = strings.IndexByte(v, '&')
	}
	b.WriteString(v)
	return b.String(), true
}
