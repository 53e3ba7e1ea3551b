package urlnorm

import (
	"net/url"
	"slices"
	"strings"
)

// DefaultTrackingParams are the query parameters that only tell a
// publisher's analytics where a click came from: campaign tags (utm_*),
// ad-click ids (fbclid, gclid, msclkid, ...), mail-campaign ids (mc_cid,
// mc_eid, _hsenc, mkt_tok, ...). A name ending in "*" matches every name
// with that prefix. The list is conservative: a parameter a site might
// route on (id, ref, source, ncid) is never in it.
var DefaultTrackingParams = []string{
	"utm_*",
	"fbclid", "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "msclkid", "yclid", "twclid", "ttclid", "li_fat_id", "igshid",
	"mc_cid", "mc_eid", "_hsenc", "_hsmi", "mkt_tok", "oly_anon_id", "oly_enc_id", "vero_id", "vero_conv", "rb_clickid",
	"_ga", "_gl", "__s",
}

// Tracking removes tracking parameters from URLs. The zero value removes
// nothing; NewTracking makes one.
type Tracking struct {
	exact    map[string]bool
	prefixes []string
}

// NewTracking returns a Tracking that removes the parameters named in
// params, each an exact name or a prefix ending in "*", compared without
// regard to case.
func NewTracking(params []string) *Tracking {
	t := &Tracking{exact: map[string]bool{}}
	for _, p := range params {
		p = strings.ToLower(strings.TrimSpace(p))
		switch {
		case p == "" || p == "*":
			// "*" would remove every parameter: never what is meant.
		case strings.HasSuffix(p, "*"):
			if !slices.Contains(t.prefixes, p[:len(p)-1]) {
				t.prefixes = append(t.prefixes, p[:len(p)-1])
			}
		default:
			t.exact[p] = true
		}
	}
	return t
}

// Params lists what t removes, in a stable order.
func (t *Tracking) Params() []string {
	if t == nil {
		return nil
	}
	var out []string
	for _, p := range t.prefixes {
		out = append(out, p+"*")
	}
	for p := range t.exact {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func (t *Tracking) matches(name string) bool {
	if t.exact[name] {
		return true
	}
	for _, p := range t.prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Strip returns raw without its tracking parameters. The other parameters
// keep their order and spelling; a query left empty goes with its "?".
// Anything that is not an http(s) URL with a query comes back unchanged,
// as does everything when t is nil.
func (t *Tracking) Strip(raw string) string {
	q := strings.IndexByte(raw, '?')
	if t == nil || q < 0 || (len(t.exact) == 0 && len(t.prefixes) == 0) {
		return raw
	}
	end := len(raw)
	if h := strings.IndexByte(raw[q:], '#'); h >= 0 {
		end = q + h
	}
	query := raw[q+1 : end]
	var kept []string
	removed := false
	for part := range strings.SplitSeq(query, "&") {
		name, _, _ := strings.Cut(part, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if part != "" && t.matches(strings.ToLower(name)) {
			removed = true
			continue
		}
		kept = append(kept, part)
	}
	if !removed {
		return raw
	}
	rest := strings.Join(kept, "&")
	if strings.Trim(rest, "&") == "" {
		return raw[:q] + raw[end:]
	}
	return raw[:q+1] + rest + raw[end:]
}
