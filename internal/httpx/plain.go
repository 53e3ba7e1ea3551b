package httpx

import "net/http"

// Plain is an http.Client over c's connections, under c's address rules
// (no private address unless c allows it) and its total timeout, that
// follows no redirect: for requests other than a feed's GET, such as a
// WebSub subscription request to a hub (internal/websub.Ask), whose URL
// a publisher chose.
func (c *Client) Plain() *http.Client {
	return &http.Client{Transport: c.hc.Transport, Timeout: c.opts.TotalTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
