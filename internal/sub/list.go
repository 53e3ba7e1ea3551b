package sub

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/opml"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// ListOptions select and shape `feed-sub ls` output.
type ListOptions struct {
	JSON  bool   // NDJSON subscription records, with the state the table shows, instead of a table
	Label string // only subscriptions with this label
}

// List writes the subscriptions, as a table for people or as NDJSON.
func List(cfg Config, o ListOptions) error {
	cfg.defaults()
	cat, done, err := cfg.catalog()
	if err != nil {
		return err
	}
	defer done()
	subs, states, err := feeds(cat, o.Label)
	if err != nil {
		return err
	}
	now := cfg.Now()
	if o.JSON {
		out := ndjson.NewWriter(cfg.Out)
		for _, s := range subs {
			// A listing is for reading and passing around: no secrets.
			if s.Auth != nil {
				s.Auth = &ndjson.Auth{Username: s.Auth.Username, Password: "(redacted)"}
			}
			s.Headers = httpx.RedactHeaderMap(s.Headers)
			if err := out.Write(listingOf(s, states[s.FeedID], now)); err != nil {
				return err
			}
		}
		return out.Flush()
	}
	tw := tabwriter.NewWriter(cfg.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FEED ID\tNAME\tLABELS\tSTATUS\tLAST FETCH\tNEXT\tURL")
	for _, s := range subs {
		st := states[s.FeedID]
		status, last, next := "disabled", "never", "-"
		if !s.Disabled {
			status = schedStatus(s, st, now)
		}
		if !st.LastFetchAt.IsZero() {
			last = ago(now, st.LastFetchAt.Time)
		}
		if at, ok := nextFetch(s, st, now); ok {
			next = until(now, at)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.FeedID[:min(8, len(s.FeedID))], cell(cmp.Or(s.Name, st.Title), 30),
			cell(strings.Join(s.Labels, ","), 24), status, last, next, s.URL)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return nil
}

// listing is a subscription as ls --json writes it: the record, and what
// the table shows of the feed's state (STATUS, LAST FETCH, NEXT), so that
// a feed the scheduler disabled reads as disabled, and why, in both.
type listing struct {
	ndjson.Subscription
	// State is the scheduler's: healthy, cooling_down, backoff, paused or
	// disabled; "" before its first decision. Disabled (by hand) is the
	// subscription's own.
	State               string        `json:"state"`
	StateReason         string        `json:"state_reason"`
	DisabledReason      string        `json:"disabled_reason"`
	ConsecutiveFailures int           `json:"consecutive_failures"`
	LastError           *ndjson.Error `json:"last_error"`
	LastFetchAt         ndjson.Time   `json:"last_fetch_at"`
	NextFetchAt         ndjson.Time   `json:"next_fetch_at"`
}

func listingOf(s ndjson.Subscription, fs catalog.FeedState, now time.Time) *listing {
	l := &listing{Subscription: s, ConsecutiveFailures: fs.ConsecutiveFailures, LastError: fs.LastError, LastFetchAt: fs.LastFetchAt}
	if st := fs.Sched; st != nil {
		l.State, l.StateReason, l.ConsecutiveFailures = string(st.Lifecycle), string(st.Reason), st.Failures
		if st.Lifecycle == sched.StateDisabled {
			l.DisabledReason = st.DisabledReason
		}
	}
	if at, ok := nextFetch(s, fs, now); ok {
		l.NextFetchAt = ndjson.At(at)
	}
	return l
}

// nextFetch is when feed-due lists the feed next (a time past is now); ok
// is false when it does not by itself: disabled by hand, or disabled for
// errors and not probed.
func nextFetch(s ndjson.Subscription, fs catalog.FeedState, now time.Time) (at time.Time, ok bool) {
	if s.Disabled {
		return time.Time{}, false
	}
	at, ok = s.CreatedAt.Time, true // never fetched: due at once
	if !fs.LastFetchAt.IsZero() || fs.Sched != nil {
		at = fs.NextFetchAt.Time
		ok = fs.Sched == nil || !fs.Sched.NextAt.IsZero()
	}
	if s.PausedUntil.After(now) && s.PausedUntil.After(fs.NextFetchAt.Time) {
		at, ok = s.PausedUntil.Time, true // feed-due skips it until then
	}
	return at, ok
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
	cat, done, err := cfg.catalog()
	if err != nil {
		return err
	}
	defer done()
	subs, states, err := feeds(cat, "")
	if err != nil {
		return err
	}
	outlines := make([]opml.Outline, 0, len(subs))
	for _, s := range subs {
		title := cmp.Or(s.Name, states[s.FeedID].Title)
		outlines = append(outlines, opml.Outline{URL: s.URL, Title: title, Labels: s.Labels, Type: "rss"})
	}
	return opml.Write(cfg.Out, "feedpipe subscriptions", outlines)
}

// feeds returns the subscriptions with label (all for ""), in the list's
// order, and their feeds' states.
func feeds(cat *catalog.Catalog, label string) ([]ndjson.Subscription, map[string]catalog.FeedState, error) {
	var subs []ndjson.Subscription
	states := map[string]catalog.FeedState{}
	err := cat.Feeds(context.Background(), catalog.FeedFilter{Label: label}, func(f *catalog.Feed) error {
		subs = append(subs, f.Sub)
		if f.Stored {
			states[f.Sub.FeedID] = f.State
		}
		return nil
	})
	return subs, states, err
}
