package cmdkit

import (
	"net/url"
	"strings"

	"github.com/urfave/cli/v2"
)

// PublicURLFlag is --public-url: the URL the world reaches feed-serve at,
// under which its WebSub callbacks and webhook endpoints lie
// (docs/design.md#push). feed-sub push sync makes the callbacks of it and
// feed-serve answers to its host; set once at the configuration file's
// top level (public-url = "https://feeds.example.org"), it reaches every
// binary that reads it.
func PublicURLFlag() cli.Flag {
	return &cli.StringFlag{Name: "public-url", EnvVars: []string{"FEEDPIPE_PUBLIC_URL"},
		Usage:       "the `URL` the world reaches feed-serve at: WebSub callbacks and webhook endpoints are under it (push: design.md in share/doc/feedpipe)",
		DefaultText: "none: no WebSub subscription"}
}

// PublicURL reads --public-url: "" or an absolute http(s) URL, without a
// trailing slash.
func PublicURL(c *cli.Context) (string, error) {
	v := strings.TrimRight(strings.TrimSpace(c.String("public-url")), "/")
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", Usagef("--public-url %q: an absolute http or https URL without a query, such as https://feeds.example.org", c.String("public-url"))
	}
	return v, nil
}
