package serve

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// Which names a request may call the server by, and what it learns from a
// proxy in front of it (docs/serve.md, "Security").
//
// A web page on another site can make a browser's name for it resolve to
// 127.0.0.1 (DNS rebinding) and then read a loopback feed-serve as if it
// were that site: the browser sends the attacker's name in Host. So a
// request is answered only when its Host is a name the server is known
// by: an IP address (which no one can rebind), localhost or a name under
// .localhost (RFC 6761 §6.3: they resolve to loopback only), the host of
// --base-url, or one of --allowed-host. Any other gets 421 Misdirected
// Request (RFC 9110 §15.5.20).

// hostAllowed reports whether the request's Host header names this server.
func (s *Server) hostAllowed(r *http.Request) bool {
	host := r.Host
	if host == "" {
		return true // HTTP/1.0 without Host: no browser sends that
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	for _, allowed := range s.hosts {
		if host == allowed {
			return true
		}
	}
	return false
}

// knownHosts are the names besides loopback's that the server answers
// to: --base-url's host and --allowed-host, lower case, without a port.
func knownHosts(baseURL string, allowed []string) []string {
	var out []string
	if u, err := url.Parse(baseURL); err == nil && u.Hostname() != "" {
		out = append(out, strings.ToLower(u.Hostname()))
	}
	for _, h := range allowed {
		if h = strings.TrimSpace(h); h != "" {
			if name, _, err := net.SplitHostPort(h); err == nil {
				h = name
			}
			out = append(out, strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), ".")))
		}
	}
	return out
}

// misdirected answers a request whose Host is not one of the server's.
func misdirected(w http.ResponseWriter, r *http.Request) {
	problem(w, r, http.StatusMisdirectedRequest, "unknown host name",
		"this server is not known by the name "+clip(r.Host)+" (a page elsewhere may have pointed that name here): "+
			"call it by an IP address, localhost, or a name given with --base-url or --allowed-host")
}

// fromProxy reports whether the request came through a proxy the server
// trusts (--trusted-proxy): only then are its X-Forwarded-* headers read.
func (s *Server) fromProxy(r *http.Request) bool {
	if len(s.cfg.TrustedProxies) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(ap.Addr().Unmap()) {
			return true
		}
	}
	return false
}

// clientAddr is the address of the client: the peer's, or, behind a
// trusted proxy, the last address X-Forwarded-For names that is not a
// trusted proxy's own (the ones before it, the client could write).
func (s *Server) clientAddr(r *http.Request) string {
	peer := r.RemoteAddr
	if ap, err := netip.ParseAddrPort(peer); err == nil {
		peer = ap.Addr().Unmap().String()
	}
	if !s.fromProxy(r) {
		return peer
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return peer
		}
		a = a.Unmap()
		trusted := false
		for _, p := range s.cfg.TrustedProxies {
			trusted = trusted || p.Contains(a)
		}
		if !trusted {
			return a.String()
		}
	}
	return peer
}

// secure reports whether the client reached the server over TLS: the
// connection is TLS, --base-url is https, or a trusted proxy says so.
func (s *Server) secure(r *http.Request) bool {
	if r.TLS != nil || strings.HasPrefix(s.cfg.BaseURL, "https://") {
		return true
	}
	return s.fromProxy(r) && strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https")
}

// origin is scheme://host of the links the server writes into an answer:
// --base-url when set, else the request's own (its Host header passed
// hostAllowed; one that is no host name goes into no link).
func (s *Server) origin(r *http.Request) string {
	if s.cfg.BaseURL != "" {
		return s.cfg.BaseURL
	}
	scheme := "http"
	if s.secure(r) {
		scheme = "https"
	}
	host := r.Host
	if host == "" || strings.IndexFunc(host, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".-:[]", c))
	}) >= 0 {
		host = "localhost"
	}
	return scheme + "://" + strings.ToLower(host)
}

// absolute makes a path of this server an absolute URL.
func (s *Server) absolute(r *http.Request, path string) string {
	return s.origin(r) + path
}

// selfPath is the request's path with its query parameters parsed and
// encoded again: a link to the request itself that carries nothing of the
// raw query a client wrote (no '>' or '"' to break out of a Link header).
func selfPath(r *http.Request) string {
	q := r.URL.Query()
	if len(q) == 0 {
		return r.URL.EscapedPath()
	}
	return r.URL.EscapedPath() + "?" + q.Encode()
}
