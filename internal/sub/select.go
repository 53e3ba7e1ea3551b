package sub

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/plural"
	"github.com/feedpipe/feedpipe/internal/stats"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Selection picks the subscriptions a command works on: those it names
// (Refs: feed ids, id prefixes or URLs), or those All, Label and State
// pick together: every one (All), narrowed to a label and to a status as
// feed-sub ls shows it (enabled, failing, refused, paused or disabled).
type Selection struct {
	Refs  []string
	All   bool
	Label string
	State string
}

// Selects reports whether the selection picks feeds by All, Label or
// State rather than by name.
func (s Selection) Selects() bool { return s.All || s.Label != "" || s.State != "" }

// States are the statuses a Selection's State may name.
var States = []string{stats.StateEnabled, stats.StateFailing, stats.StateRefused, stats.StatePaused, stats.StateDisabled}

// Resolve returns the references a selection stands for: its Refs as they
// are, or the feed ids of the subscriptions it picks, in the list's order.
// Picking none is an error matching catalog.ErrNoSuchSubscription, as a
// reference that names none is.
func Resolve(cfg Config, sel Selection) ([]string, error) {
	cfg.defaults()
	switch {
	case !sel.Selects():
		return sel.Refs, nil
	case len(sel.Refs) > 0:
		return nil, fmt.Errorf("%w: name feeds or pick them (--all, --label, --state), not both", ErrInvalid)
	case sel.State != "" && !slices.Contains(States, sel.State):
		return nil, fmt.Errorf("%w: state %q is not one of %s", ErrInvalid, sel.State, strings.Join(States, ", "))
	}
	cat, done, err := cfg.catalog()
	if err != nil {
		return nil, err
	}
	defer done()
	now := cfg.Now()
	var ids []string
	err = cat.Feeds(context.Background(), catalog.FeedFilter{Label: sel.Label}, func(f *catalog.Feed) error {
		if sel.State == "" || stats.StatusOf(f.Sub, f.State, now).State == sel.State {
			ids = append(ids, f.Sub.FeedID)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		var what []string
		if sel.Label != "" {
			what = append(what, fmt.Sprintf("with the label %q", sel.Label))
		}
		if sel.State != "" {
			what = append(what, "in state "+sel.State)
		}
		if len(what) == 0 {
			return nil, fmt.Errorf("%w: there are no subscriptions", catalog.ErrNoSuchSubscription)
		}
		return nil, fmt.Errorf("%w: no subscription %s (see feed-sub ls)", catalog.ErrNoSuchSubscription, strings.Join(what, " and "))
	}
	return ids, nil
}

// pick returns the indexes in subs of the subscriptions refs name, each
// once, in the order named: an exact feed id is looked up at once (a
// selection of 100,000 is not 100,000 scans), anything else as
// catalog.FindSubscription finds it. Any ref that names none is an error.
func pick(subs []ndjson.Subscription, refs []string) ([]int, error) {
	if len(refs) == 0 {
		return nil, fmt.Errorf("%w: name at least one subscription (feed id, id prefix or URL), or pick them with --all, --label or --state", ErrInvalid)
	}
	byID := make(map[string]int, len(subs))
	for i, s := range subs {
		byID[s.FeedID] = i
	}
	seen := make(map[int]bool, len(refs))
	var picked []int
	for _, ref := range refs {
		i, ok := byID[strings.TrimSpace(ref)]
		if !ok {
			var err error
			if i, err = catalog.FindSubscription(subs, ref); err != nil {
				return nil, err
			}
		}
		if !seen[i] {
			seen[i] = true
			picked = append(picked, i)
		}
	}
	return picked, nil
}

// maxFeedLines is how many feeds a command reports one by one: past it,
// only how many it changed.
const maxFeedLines = 20

// report gathers what a command did to each feed, to say once it is
// saved: a line per feed, and how many it changed when there was more
// than one.
type report struct {
	lines          []string
	feeds, changed int
}

// feed notes what was done to one feed (changed or not), in a line.
func (r *report) feed(changed bool, format string, args ...any) {
	r.feeds++
	if changed {
		r.changed++
	}
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

// note adds a line that counts no feed.
func (r *report) note(format string, args ...any) {
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

// write says it to cfg.Msg, each line after "feed-sub: "; with more than
// one feed, total says how many changed (and were left as they were). Of
// feeds picked in bulk (cfg.Bulk: --all, --label, --state) it says only
// the total, the line of each feed going to the log at debug.
func (r *report) write(cfg Config, total func(changed, unchanged int) string) {
	w := cfg.Msg
	switch {
	case cfg.Bulk && total != nil:
		for _, l := range r.lines {
			cfg.Log.Debug(l)
		}
	case r.feeds <= maxFeedLines:
		for _, l := range r.lines {
			fmt.Fprintf(w, "feed-sub: %s\n", l)
		}
	}
	if (r.feeds > 1 || cfg.Bulk) && total != nil {
		fmt.Fprintf(w, "feed-sub: %s\n", total(r.changed, r.feeds-r.changed))
	}
}

// counted is a total line: "disabled 3 feeds" and, when some were left as
// they were, "; 2 unchanged (why)".
func counted(verb, why string) func(changed, unchanged int) string {
	return func(changed, unchanged int) string {
		s := verb + " " + plural.Count(changed, "feed", "feeds")
		if unchanged > 0 {
			s += fmt.Sprintf("; %d unchanged (%s)", unchanged, why)
		}
		return s
	}
}
