package cmdkit

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

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
