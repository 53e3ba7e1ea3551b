package sub

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/opml"
	"github.com/feedpipe/feedpipe/internal/plural"
	"github.com/feedpipe/feedpipe/internal/safetext"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/stats"
	"github.com/feedpipe/feedpipe/internal/table"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// ListOptions select and shape `feed-sub ls` output.
type ListOptions struct {
	JSON  bool   // NDJSON subscription records, with the state the table shows, instead of a table
	Label string // only subscriptions with this label
	State string // only subscriptions in this state, as STATUS begins (States)
	// Width, when set, is the terminal's: the table fits it, its wide
	// columns (names, labels, statuses, URLs) cut to fit.
	Width int
}

// List writes the subscriptions, as a table for people or as NDJSON.
func List(cfg Config, o ListOptions) error {
	cfg.defaults()
	cat, done, err := cfg.catalog()
	if err != nil {
		return err
	}
	defer done()
	if o.State != "" && !slices.Contains(States, o.State) {
		return fmt.Errorf("%w: state %q is not one of %s", ErrInvalid, o.State, strings.Join(States, ", "))
	}
	subs, states, err := feeds(cat, o.Label)
	if err != nil {
		return err
	}
	now := cfg.Now()
	if o.State != "" {
		subs = slices.DeleteFunc(subs, func(s ndjson.Subscription) bool { return stats.StatusOf(s, states[s.FeedID], now).State != o.State })
	}
	push, walks, err := pushAndWalks(cat, now)
	if err != nil {
		return err
	}
	if o.JSON {
		out := ndjson.NewWriter(cfg.Out)
		for _, s := range subs {
			// A listing is for reading and passing around: no secrets.
			if err := out.Write(WithPush(ListingOf(s, states[s.FeedID], now), push, walks)); err != nil {
				return err
			}
		}
		return out.Flush()
	}
	rows := [][]string{{"FEED ID", "NAME", "LABELS", "STATUS", "LAST FETCH", "NEXT", "URL"}}
	var pushCol, walkCol []string // PUSH and BACKFILL, shown when a feed has either
	for _, s := range subs {
		st := states[s.FeedID]
		status := stats.StatusOf(s, st, now)
		last, next := "never", "-"
		if !st.LastFetchAt.IsZero() {
			last = stats.Ago(now, st.LastFetchAt.Time)
		}
		if status.Listed {
			next = stats.Until(now, status.Next)
		}
		l := WithPush(listingOf(s, st, now), push, walks)
		if n, ok := pushNext(l, st, now); ok {
			next = n
		}
		pushCol, walkCol = append(pushCol, pushCell(l, now)), append(walkCol, walkCell(l))
		rows = append(rows, []string{s.FeedID[:min(8, len(s.FeedID))], safetext.Cell(cmp.Or(s.Name, st.Title), 30),
			safetext.Cell(strings.Join(s.Labels, ","), 24), status.Text, last, next, safetext.Cell(s.URL, 2048)})
	}
	// To fit a terminal, the name, the labels, the status and the URL
	// (in its middle: its host and its end stay) are cut, the longest
	// beyond its minimum first.
	cols := []table.Col{{}, {Min: 12}, {Min: 8}, {Min: 16}, {}, {}, {Min: 24, Middle: true}}
	rows, cols = addColumn(rows, cols, "PUSH", pushCol)
	rows, cols = addColumn(rows, cols, "BACKFILL", walkCol)
	if err := table.Write(cfg.Out, rows, cols, o.Width); err != nil {
		return err
	}
	refused := 0
	for _, s := range subs {
		if e := states[s.FeedID].LastError; e != nil && e.Code == notAFeed {
			fmt.Fprintf(cfg.Msg, "feed-sub: note: %s is not a feed (a web page?): feed-sub discover %s lists the feeds it links to\n", s.URL, s.URL)
		}
		if stats.StatusOf(s, states[s.FeedID], now).State == stats.StateRefused {
			refused++
		}
	}
	if refused > 0 {
		fmt.Fprintf(cfg.Msg, "feed-sub: note: %s refused: %s\n", plural.Count(refused, "feed is", "feeds are"), stats.RefusedHint)
	}
	return nil
}

// notAFeed is feed-parse's error code for a body that is not a feed.
const notAFeed = "not_a_feed"

// listing is a subscription as ls --json writes it: the record, and what
// the table shows of the feed's state (STATUS, LAST FETCH, NEXT), so that
// a feed the scheduler disabled reads as disabled, and why, in both.
type listing struct {
	ndjson.Subscription
	// Status and StatusText are the feed's status as every command says
	// it (stats.StatusOf): enabled, failing, refused, paused or disabled; and the
	// STATUS column.
	Status     string `json:"status"`
	StatusText string `json:"status_text"`
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
	// What the feed is, as its last body read said (catalog.FeedState).
	Format        string `json:"format"`
	FormatVersion string `json:"format_version"`
	ContentType   string `json:"content_type"`
	Publisher     string `json:"publisher"`
	// Link is the site the feed links to; Warnings what its last body's
	// parse repaired or left out ([] for none).
	Link     string   `json:"link"`
	Warnings []string `json:"warnings"`
	// PushState and Walk are the feed's push (a WebSub subscription, a
	// webhook source's endpoint, what was pushed) and its archive walk;
	// left out when there is nothing to say (push.go). Named apart from
	// the subscription's push and backfill settings, which the record
	// keeps.
	PushState *catalog.PushStatus `json:"push_state,omitempty"`
	Walk      *catalog.Walk       `json:"walk,omitempty"`
}

func listingOf(s ndjson.Subscription, fs catalog.FeedState, now time.Time) *listing {
	status := stats.StatusOf(s, fs, now)
	l := &listing{Subscription: s, Status: status.State, StatusText: status.Text,
		ConsecutiveFailures: fs.ConsecutiveFailures, LastError: fs.LastError, LastFetchAt: fs.LastFetchAt,
		Format: fs.Format, FormatVersion: fs.FormatVersion, ContentType: fs.ContentType, Publisher: fs.Publisher,
		Link: fs.Link, Warnings: ndjson.NonNil(fs.Warnings)}
	if st := fs.Sched; st != nil {
		l.State, l.StateReason, l.ConsecutiveFailures = string(st.Lifecycle), string(st.Reason), st.Failures
		if st.Lifecycle == sched.StateDisabled {
			l.DisabledReason = st.DisabledReason
		}
	}
	if status.Listed {
		l.NextFetchAt = ndjson.At(status.Next)
	}
	return l
}

// Export writes the subscriptions as an OPML 2.0 document: URLs, names (or
// the feeds' own titles), labels as folders and categories, and in
// attributes of feedpipe's namespace, which other readers ignore, a source
// type other than auto, full text and the scraper configuration; Import
// reads them all back. Intervals, cron, pauses and the disabled flag are
// not part of it: ExportNDJSON writes every setting.
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
		o := opml.Outline{URL: s.URL, Title: title, Labels: s.Labels, Type: "rss", Fulltext: s.Fulltext, Scrape: string(s.Scrape)}
		if s.SourceType != ndjson.SourceAuto {
			o.SourceType = s.SourceType
		}
		outlines = append(outlines, o)
	}
	return opml.Write(cfg.Out, "feedpipe subscriptions", outlines)
}

// ExportNDJSON writes every subscription as a subscription record, with
// every setting, for a backup that Import restores whole. Extra headers and
// basic auth only withSecrets: without, they are left out (and said to be),
// so that the file can be passed around.
func ExportNDJSON(cfg Config, withSecrets bool) error {
	cfg.defaults()
	cat, done, err := cfg.catalog()
	if err != nil {
		return err
	}
	defer done()
	subs, _, err := feeds(cat, "")
	if err != nil {
		return err
	}
	out := ndjson.NewWriter(cfg.Out)
	secrets := 0
	for _, s := range subs {
		if !withSecrets && (s.Auth != nil || len(s.Headers) > 0 || s.WebhookSecret != "") {
			s.Auth, s.Headers, s.WebhookSecret = nil, nil, ""
			secrets++
		}
		if err := out.Write(&s); err != nil {
			return err
		}
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if secrets > 0 {
		fmt.Fprintf(cfg.Msg, "feed-sub: note: the headers and credentials of %s are left out (--with-secrets keeps them)\n", plural.Count(secrets, "feed", "feeds"))
	}
	return nil
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
