package read

import (
	"context"
	"fmt"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/plural"
)

// MarkSpec is what feed-read mark does: an action on the entries of UIDs,
// or (read only) on every entry of a feed, of a label's feeds, or of all
// feeds (All), first seen before Until when it is set.
type MarkSpec struct {
	Action string // catalog.MarkRead, MarkUnread, MarkStar or MarkUnstar
	UIDs   []string
	Feed   string // a feed id, URL or name (catalog.FindFeed)
	Label  string
	All    bool
	Until  time.Time
}

// Mark applies spec for the reader and says on Err what it did. A uid the
// store has no entry of is reported, the others are marked all the same,
// and the error then matches pipe.ErrFailed (exit status 1).
func Mark(ctx context.Context, cfg Config, spec MarkSpec) error {
	if err := catalog.CheckReader(cfg.reader()); err != nil {
		return usagef("--reader: %v", err)
	}
	switch spec.Action {
	case catalog.MarkRead, catalog.MarkUnread, catalog.MarkStar, catalog.MarkUnstar:
	case "":
		return usagef("mark takes an action: read, unread, star or unstar, then the entries' uids")
	default:
		return usagef("mark %q: the action is read, unread, star or unstar", spec.Action)
	}
	picks := 0
	for _, b := range []bool{spec.Feed != "", spec.Label != "", spec.All} {
		if b {
			picks++
		}
	}
	switch {
	case picks > 1:
		return usagef("--feed, --label and --all: choose one")
	case picks == 1 && len(spec.UIDs) > 0:
		return usagef("mark takes uids or --feed, --label or --all, not both")
	case picks == 1 && spec.Action != catalog.MarkRead:
		return usagef("--feed, --label and --all mark entries read only (mark %s takes uids)", spec.Action)
	case picks == 0 && len(spec.UIDs) == 0:
		return usagef("mark %s: name the entries by their uids (feed-read lists them), or --feed, --label or --all", spec.Action)
	case picks == 0 && !spec.Until.IsZero():
		return usagef("--until goes with --feed, --label or --all")
	}
	cat, closeCat, err := cfg.open(ctx)
	if err != nil {
		return err
	}
	defer closeCat()
	reader := cfg.reader()
	if picks == 1 {
		var n int
		var what string
		switch {
		case spec.Feed != "":
			id, err := cat.FindFeed(ctx, spec.Feed)
			if err != nil {
				return usagef("--feed: %v", err)
			}
			what = "of feed " + spec.Feed
			n, err = cat.MarkAllRead(ctx, reader, id, spec.Until)
			if err != nil {
				return err
			}
		case spec.Label != "":
			if ok, err := cat.HasLabel(ctx, spec.Label); err != nil {
				return err
			} else if !ok {
				return usagef("--label %q: no subscription has it (see feed-sub ls)", spec.Label)
			}
			what = "of label " + spec.Label
			if n, err = cat.MarkLabelRead(ctx, reader, spec.Label, spec.Until); err != nil {
				return err
			}
		default:
			what = "of every feed"
			if n, err = cat.MarkAllRead(ctx, reader, "", spec.Until); err != nil {
				return err
			}
		}
		if !spec.Until.IsZero() {
			what += " first seen before " + spec.Until.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(cfg.Err, "feed-read: marked %s read %s (reader %s)\n", plural.Count(n, "entry", "entries"), what, reader)
		return nil
	}
	var keys []catalog.EntryKey
	failed := 0
	for _, uid := range spec.UIDs {
		if !checkUID(uid) {
			fmt.Fprintf(cfg.Err, "feed-read: %q is not an entry uid (16 hex digits, as feed-read lists them)\n", uid)
			failed++
			continue
		}
		rows, _, err := cat.EntriesByUID(ctx, uid)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			fmt.Fprintf(cfg.Err, "feed-read: no entry %s in the store\n", uid)
			failed++
			continue
		}
		for _, r := range rows {
			keys = append(keys, catalog.EntryKey{FeedID: r.FeedID, UID: r.UID})
		}
	}
	if len(keys) > 0 {
		if _, err := cat.Mark(ctx, reader, spec.Action, keys, cfg.now()); err != nil {
			return err
		}
		fmt.Fprintf(cfg.Err, "feed-read: marked %s %s (reader %s)\n", plural.Count(len(keys), "entry", "entries"), done[spec.Action], reader)
	}
	if failed > 0 {
		return failedError(fmt.Sprintf("%s of %d not found (the others are marked)", plural.Count(failed, "uid", "uids"), len(spec.UIDs)))
	}
	return nil
}

// done words what an action did.
var done = map[string]string{catalog.MarkRead: "read", catalog.MarkUnread: "unread", catalog.MarkStar: "starred", catalog.MarkUnstar: "unstarred"}

// failedError is a run in which some uids failed, each reported: it
// matches pipe.ErrFailed (exit status 1).
type failedError string

func (e failedError) Error() string { return string(e) }
func (e failedError) Unwrap() error { return pipe.ErrFailed }
