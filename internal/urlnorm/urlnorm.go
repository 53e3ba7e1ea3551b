// Package urlnorm canonicalises feed and entry URLs (RFC 3986 §6.2,
// docs/design.md#identity) so that
// one resource has one spelling in ids and in the store.
package urlnorm

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ErrScheme is returned for a URL whose scheme is not http or https.
var ErrScheme = errors.New("only http and https URLs can be fetched")

// Normalize returns the canonical form of an absolute http(s) URL: scheme and
// host lower-cased, the default port and the fragment removed, an empty path
// written as "/". The query is kept as is: publishers route on it.
func Normalize(raw string) (string, error) {
	u, err := Parse(raw)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// Parse is Normalize returning the parsed URL.
func Parse(raw string) (*url.URL, error) {
	u, err := parse(raw)
	if err != nil {
		return nil, err
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// parse canonicalises everything but the fragment.
func parse(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("urlnorm: %q is not a URL: %w", raw, unwrapURLError(err))
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		if u.Scheme == "" {
			return nil, fmt.Errorf("urlnorm: %q has no scheme: %w", raw, ErrScheme)
		}
		return nil, fmt.Errorf("urlnorm: %q: %w", raw, ErrScheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("urlnorm: %q has no host", raw)
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	port := u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") { // IPv6 literal
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	u.Host = host
	if u.Path == "" && u.Opaque == "" {
		u.Path = "/"
	}
	return u, nil
}

// SplitUserinfo returns raw without the user:password@ of its authority,
// and the credentials it held (nil if none): a URL is written into records
// and logs, where a password must never go, so callers move them to where
// credentials belong (basic auth). raw is returned as it is when it holds
// none or does not parse.
func SplitUserinfo(raw string) (string, *url.Userinfo) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.User == nil {
		return raw, nil
	}
	user := u.User
	u.User = nil
	if _, hasPass := user.Password(); user.Username() == "" && !hasPass {
		user = nil // "http://@host/": nothing to keep
	}
	return u.String(), user
}

// Key is the form of a URL used to compare identities that publishers
// spell inconsistently: normalized, with the scheme dropped so that an
// http/https flip does not make a new identity, and the fragment kept, since
// some feeds tell items apart only by it ("page#item-2"). Strings that are
// not http(s) URLs (tag: URIs, bare ids) are returned trimmed.
func Key(raw string) string {
	// What does not begin with http:// or https:// cannot parse as one:
	// spare the parse and its error (ids that are tags, keys already).
	if t := strings.TrimSpace(raw); len(t) < 7 || !strings.EqualFold(t[:7], "http://") && (len(t) < 8 || !strings.EqualFold(t[:8], "https://")) {
		return t
	}
	u, err := parse(raw)
	if err != nil {
		return strings.TrimSpace(raw)
	}
	return strings.TrimPrefix(u.String(), u.Scheme+":")
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
