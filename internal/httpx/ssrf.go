package httpx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
)

// ErrAddressRefused is returned when a host resolves to an address feedpipe
// refuses to connect to (loopback, private, ...) without --allow-private.
var ErrAddressRefused = errors.New("refusing to connect to a non-public address")

// Ranges that are not public unicast on the Internet, beyond what netip's
// predicates cover.
var refusedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("::ffff:0:0:0/96"), // IPv4-translated (SIIT, RFC 2765): never a public host
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated, RFC 3879): a private network
}

// publicAddr reports whether a is an address on the public Internet,
// looking through the IPv6 forms that embed an IPv4 address (mapped,
// compatible, NAT64, 6to4, Teredo), so that ::ffff:127.0.0.1 or
// 64:ff9b::10.0.0.1 cannot reach what 127.0.0.1 and 10.0.0.1 cannot.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if a.Is6() {
		if v4, ok := embeddedIPv4(a); ok {
			return publicAddr(v4)
		}
	}
	if !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() ||
		a.IsMulticast() || a.IsUnspecified() || a.IsInterfaceLocalMulticast() {
		return false
	}
	for _, p := range refusedPrefixes {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	nat64Loc  = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour = netip.MustParsePrefix("2002::/16")
	teredo    = netip.MustParsePrefix("2001::/32")
	compat    = netip.MustParsePrefix("::/96")
)

// embeddedIPv4 returns the IPv4 address carried inside an IPv6 address of a
// transition form.
func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case nat64.Contains(a), nat64Loc.Contains(a), compat.Contains(a) && !a.IsUnspecified() && a != netip.IPv6Loopback():
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	case teredo.Contains(a): // the client address, bit-inverted
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), true
	}
	return netip.Addr{}, false
}

// checkAddress checks the address a connection is about to be made to (the
// dialer's Control), after DNS resolution, so that a public name pointing
// at a private address (or re-pointed there: DNS rebinding) is refused too.
func checkAddress(address string, public func(netip.AddrPort) bool) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrAddressRefused, address)
	}
	if !public(ap) {
		return fmt.Errorf("%w: %s (feed-sub set FEED --allow-private permits it for one feed, FEEDPIPE_ALLOW_PRIVATE=1 for every feed)", ErrAddressRefused, ap.Addr())
	}
	return nil
}

// Refused says, before any request, whether the client refuses the
// address of rawURL's host: every address its name resolves to (or the
// address it is) is one it may not connect to. The error wraps
// ErrAddressRefused and names the address. nil when the client allows
// private addresses, when an address is public, and when the name does
// not resolve (a request says why).
func (c *Client) Refused(ctx context.Context, rawURL string) error {
	if c.opts.AllowPrivate {
		return nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return nil
	}
	port, _ := strconv.ParseUint(u.Port(), 10, 16)
	if port == 0 {
		port = map[string]uint64{"http": 80, "https": 443}[u.Scheme]
	}
	addrs := []netip.Addr{}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil {
		addrs = append(addrs, a)
	} else {
		r := c.opts.Resolver
		if r == nil {
			r = net.DefaultResolver
		}
		if addrs, err = r.LookupNetIP(ctx, "ip", u.Hostname()); err != nil {
			return nil
		}
	}
	for _, a := range addrs {
		if c.public(netip.AddrPortFrom(a.Unmap(), uint16(port))) {
			return nil
		}
	}
	if len(addrs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrAddressRefused, addrs[0].Unmap())
}
