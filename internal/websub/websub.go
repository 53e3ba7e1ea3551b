// Package websub is feedpipe's side of W3C WebSub as a subscriber: a
// feed's hub and topic from its HTTP Link headers, subscription and
// unsubscription requests to a hub, and the check of a distributed
// body's signature. feed-serve answers the hub (the callback), feed-sub
// push sync asks it.
package websub

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Modes of a hub's request to the callback, and of ours to the hub
// (WebSub §5.1, §5.3).
const (
	ModeSubscribe   = "subscribe"
	ModeUnsubscribe = "unsubscribe"
	ModeDenied      = "denied"
)

// ErrSignature is a distributed body whose X-Hub-Signature is missing,
// of an unknown method, or wrong (WebSub §7.1.2: it is ignored).
var ErrSignature = errors.New("websub: bad signature")

// signatureMethods are the methods of X-Hub-Signature, WebSub §7.1.1.
var signatureMethods = map[string]func() hash.Hash{
	"sha1": sha1.New, "sha256": sha256.New, "sha384": sha512.New384, "sha512": sha512.New,
}

// Verify checks header, an X-Hub-Signature ("sha256=HEX"), against body
// and the subscription's secret, in constant time.
func Verify(header string, body, secret []byte) error {
	method, sig, ok := strings.Cut(strings.TrimSpace(header), "=")
	newHash := signatureMethods[strings.ToLower(method)]
	if !ok || newHash == nil {
		return fmt.Errorf("%w: %q is not METHOD=HEX of sha1, sha256, sha384 or sha512", ErrSignature, clip(header))
	}
	want, err := hex.DecodeString(sig)
	if err != nil {
		return fmt.Errorf("%w: the signature is not hex", ErrSignature)
	}
	m := hmac.New(newHash, secret)
	m.Write(body)
	if !hmac.Equal(m.Sum(nil), want) {
		return fmt.Errorf("%w: it is not the body's under the subscription's secret", ErrSignature)
	}
	return nil
}

// Sign is the X-Hub-Signature of body under secret with method (sha1,
// sha256, sha384, sha512): what a hub sends.
func Sign(method string, body, secret []byte) string {
	m := hmac.New(signatureMethods[method], secret)
	m.Write(body)
	return method + "=" + hex.EncodeToString(m.Sum(nil))
}

// Links reads the hub and self links of HTTP Link header values (RFC
// 8288), resolved against base: WebSub §4 has a publisher name them there
// first, the feed's own links second.
func Links(values []string, base *url.URL) (hubs []string, self string) {
	for _, v := range values {
		for _, link := range splitLinks(v) {
			target, params, ok := strings.Cut(link, ">")
			target = strings.TrimSpace(target)
			if !ok || !strings.HasPrefix(target, "<") {
				continue
			}
			u, err := url.Parse(strings.TrimPrefix(target, "<"))
			if err != nil {
				continue
			}
			if base != nil {
				u = base.ResolveReference(u)
			}
			for _, rel := range relsOf(params) {
				switch rel {
				case "hub":
					hubs = append(hubs, u.String())
				case "self":
					if self == "" {
						self = u.String()
					}
				}
			}
		}
	}
	return hubs, self
}

// splitLinks splits a Link header value at the commas between links, not
// those inside a URI or a quoted parameter.
func splitLinks(v string) []string {
	var out []string
	start, inURI, inQuote := 0, false, false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '<' && !inQuote:
			inURI = true
		case c == '>' && !inQuote:
			inURI = false
		case c == '"' && !inURI:
			inQuote = !inQuote
		case c == ',' && !inURI && !inQuote:
			out = append(out, v[start:i])
			start = i + 1
		}
	}
	return append(out, v[start:])
}

// relsOf are the relation types of a link's parameters: rel="a b" or
// rel=a, lower case.
func relsOf(params string) []string {
	for _, p := range strings.Split(params, ";") {
		name, value, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && strings.EqualFold(strings.TrimSpace(name), "rel") {
			return strings.Fields(strings.ToLower(strings.Trim(strings.TrimSpace(value), `"`)))
		}
	}
	return nil
}

// Request is a subscription request to a hub (WebSub §5.1).
type Request struct {
	Hub, Topic, Callback string
	Mode                 string // ModeSubscribe or ModeUnsubscribe
	Secret               string // hub.secret: at most 200 bytes
	Lease                time.Duration
}

// Ask sends r to its hub. A hub answers 202 Accepted (or another 2xx) and
// verifies intent later, at the callback; anything else is an error that
// says what the hub answered.
func Ask(ctx context.Context, client *http.Client, r Request) error {
	form := url.Values{"hub.mode": {r.Mode}, "hub.topic": {r.Topic}, "hub.callback": {r.Callback}}
	if r.Secret != "" {
		form.Set("hub.secret", r.Secret)
	}
	if r.Lease > 0 {
		form.Set("hub.lease_seconds", strconv.Itoa(int(r.Lease/time.Second)))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.Hub, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("websub: %s %s: %w", r.Mode, r.Hub, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("websub: %s at %s: %w", r.Mode, r.Hub, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("websub: %s at %s: the hub answered %s: %s", r.Mode, r.Hub, resp.Status, clip(strings.TrimSpace(string(body))))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}
