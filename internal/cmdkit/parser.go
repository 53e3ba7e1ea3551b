package cmdkit

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/urlnorm"
)

// TrackingFlags are the flags of the tracking-parameter policy, for every
// command that parses feeds (feed-parse, feed-store reparse): the same
// flags must give the same entry links and ids.
func TrackingFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "tracking-params", Usage: "more query parameters to remove from entry links, comma-separated (name or prefix*)", EnvVars: []string{"FEEDPIPE_TRACKING_PARAMS"}},
		&cli.BoolFlag{Name: "keep-tracking-params", Usage: "remove no query parameters from entry links", EnvVars: []string{"FEEDPIPE_KEEP_TRACKING_PARAMS"}},
	}
}

// Tracking is the policy TrackingFlags ask for: the default parameters plus
// --tracking-params, or nil (remove none) with --keep-tracking-params.
func Tracking(c *cli.Context) *urlnorm.Tracking {
	if c.Bool("keep-tracking-params") {
		return nil
	}
	params := slices.Clone(urlnorm.DefaultTrackingParams)
	for _, name := range strings.Split(c.String("tracking-params"), ",") {
		if name = strings.TrimSpace(name); name != "" {
			params = append(params, name)
		}
	}
	return urlnorm.NewTracking(params)
}

// ParserFlags are feed-parse's limits and TrackingFlags: every command that
// parses payloads (feed-parse, feed-store reparse) takes them.
func ParserFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.IntFlag{Name: "max-xml-depth", Usage: "deepest element nesting a document may have; deeper ones fail with too_deep", Value: parse.MaxXMLDepth, EnvVars: []string{"FEEDPIPE_MAX_XML_DEPTH", "MAX_XML_DEPTH"}},
		&cli.IntFlag{Name: "max-items", Usage: "most items a document may have; more fail with too_many_items", Value: parse.MaxItems, EnvVars: []string{"FEEDPIPE_MAX_ITEMS"}},
		&cli.Int64Flag{Name: "max-body-bytes", Usage: "largest payload parsed; larger ones fail with payload_too_large", Value: parse.MaxBodyBytes, EnvVars: []string{"FEEDPIPE_MAX_BODY_BYTES", "MAX_BODY_BYTES"}},
	}, TrackingFlags()...)
}

// Parser is the parser ParserFlags ask for.
func Parser(c *cli.Context) (*parse.Parser, error) {
	for _, name := range []string{"max-xml-depth", "max-items"} {
		if c.Int(name) <= 0 {
			return nil, Usagef("--%s must be a positive number", name)
		}
	}
	if c.Int64("max-body-bytes") <= 0 {
		return nil, Usagef("--max-body-bytes must be a positive number")
	}
	return &parse.Parser{MaxDepth: c.Int("max-xml-depth"), MaxItems: c.Int("max-items"), MaxBodyBytes: c.Int64("max-body-bytes"),
		Tracking: Tracking(c)}, nil
}
