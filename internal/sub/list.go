package sub

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/opml"
	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// ListOptions select and shape `feed-sub ls` output.
type ListOptions struct {
	JSON  bool   // NDJSON subscription records instead of a table
	Label string // only subscriptions with this label
}

// List writes the subscriptions, as a table for people or as NDJSON.
func List(cfg Config, o ListOptions) error {
	cfg.defaults()
	subs, bad, err := cfg.Store.Subscriptions()
	if err != nil {
		return err
	}
	if bad > 0 {
		fmt.Fprintf(cfg.Msg, "feed-sub: warning: %d malformed lines in %s were skipped\n", bad, cfg.Store.Path(storage.SubscriptionsFile))
	}
	if o.Label != "" {
		subs = slices.DeleteFunc(subs, func(s ndjson.Subscription) bool { return !slices.Contains(s.Labels, o.Label) })
	}
	if o.JSON {
		out := ndjson.NewWriter(cfg.Out)
		for i := range subs {
			// A listing is for reading and passing around: no secrets.
			if subs[i].Auth != nil {
				subs[i].Auth = &ndjson.Auth{Username: subs[i].Auth.Username, Password: "(redacted)"}
			}
			subs[i].Headers = httpx.RedactHeaderMap(subs[i].Headers)
			if err := out.Write(&subs[i]); err != nil {
				return err
			}
		}
		return out.Flush()
	}
	states, err := cfg.Store.States()
	if err != nil {
		return err
	}
	now := cfg.Now()
	tw := tabwriter.NewWriter(cfg.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FEED ID\tNAME\tLABELS\tSTATUS\tLAST FETCH\tNEXT\tURL")
	for _, s := range subs {
		st, fetched := states.ByFeed[s.FeedID]
		status, last, next := "enabled", "never", "now"
		if s.Disabled {
			status, next = "disabled", "-"
		} else {
			status = schedStatus(s, st, now)
		}
		if fetched && !st.LastFetchAt.IsZero() {
			last = ago(now, st.LastFetchAt.Time)
		}
		if fetched && !s.Disabled && (!st.LastFetchAt.IsZero() || st.Sched != nil) {
			next = until(now, st.NextFetchAt.Time)
			if st.Sched != nil && st.Sched.NextAt.IsZero() {
				next = "-"
			}
		}
		if !s.Disabled && s.PausedUntil.After(now) && s.PausedUntil.After(st.NextFetchAt.Time) {
			next = until(now, s.PausedUntil.Time) // feed-due skips it until then
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.FeedID[:min(8, len(s.FeedID))], cell(cmp.Or(s.Name, st.Title), 30),
			cell(strings.Join(s.Labels, ","), 24), status, last, next, s.URL)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return nil
}

func errorCode(e *ndjson.Error) string {
	if e == nil {
		return "?"
	}
	return e.Code
}

// cell shortens s for a table column, on a rune boundary.
func cell(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "-"
	}
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func ago(now, t time.Time) string {
	return human(now.Sub(t)) + " ago"
}

func until(now, t time.Time) string {
	if !t.After(now) {
		return "now"
	}
	return "in " + human(t.Sub(now))
}

// human renders a duration the way a person says it: 45s, 12m, 3h, 2d.
func human(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
}

// Export writes the subscriptions as an OPML 2.0 document: URLs, names (or
// the feeds' own titles), labels as folders and categories, so that Import
// reads them back. Intervals, cron and disabled flags are not part of OPML;
// subscriptions.ndjson keeps them.
func Export(cfg Config) error {
	cfg.defaults()
	subs, _, err := cfg.Store.Subscriptions()
	if err != nil {
		return err
	}
	states, err := cfg.Store.States()
	if err != nil {
		return err
	}
	outlines := make([]opml.Outline, 0, len(subs))
	for _, s := range subs {
		title := cmp.Or(s.Name, states.ByFeed[s.FeedID].Title)
		outlines = append(outlines, opml.Outline{URL: s.URL, Title: title, Labels: s.Labels, Type: "rss"})
	}
	return opml.Write(cfg.Out, "feedpipe subscriptions", outlines)
}
