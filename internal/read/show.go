package read

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/entrytext"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// ErrNoEntry marks a uid the store has no entry of.
var ErrNoEntry = errors.New("no entry")

// Show prints the entries of uids as text: title, feed, date, link,
// authors and enclosures, then the content (else the summary) made
// readable (Text), then its links as [1] URL footnotes; a rule of dashes
// between entries. Unless keepUnread, each entry shown is marked read for
// the reader, as a reader app does when an entry is opened. A uid the
// store does not have is an error (ErrNoEntry) after the others are shown.
func Show(ctx context.Context, cfg Config, uids []string, keepUnread bool) error {
	if err := catalog.CheckReader(cfg.reader()); err != nil {
		return usagef("--reader: %v", err)
	}
	if len(uids) == 0 {
		return usagef("show takes the uid of an entry (feed-read lists them)")
	}
	for _, uid := range uids {
		if !checkUID(uid) {
			return usagef("%q is not an entry uid: 16 hex digits, as feed-read lists them", uid)
		}
	}
	cat, done, err := cfg.open(ctx)
	if err != nil {
		return err
	}
	defer done()
	out := bufio.NewWriter(cfg.Out)
	l := &lister{cfg: &cfg, cat: cat, out: out}
	width := cfg.Width
	switch {
	case width <= 0:
		width = 72
	case width > 100:
		width = 100
	}
	var missing []string
	var keys []catalog.EntryKey
	shown := 0
	for _, uid := range uids {
		rows, _, err := cat.EntriesByUID(ctx, uid)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			missing = append(missing, uid)
			continue
		}
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = r.FeedID
		}
		names, err := cat.FeedNames(ctx, ids)
		if err != nil {
			return err
		}
		marks, err := cat.MarksOf(ctx, cfg.reader(), rows)
		if err != nil {
			return err
		}
		for _, r := range rows {
			r.Marks = marks[r.ID]
			_, e, err := l.record(r)
			if err != nil {
				return fmt.Errorf("entry %s: %w", uid, err)
			}
			if shown > 0 {
				out.WriteString("\n" + strings.Repeat("-", min(width, 72)) + "\n\n")
			}
			shown++
			out.WriteString(l.show(r, e, names[r.FeedID], width))
			keys = append(keys, catalog.EntryKey{FeedID: r.FeedID, UID: r.UID})
		}
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	if !keepUnread && len(keys) > 0 {
		if _, err := cat.Mark(ctx, cfg.reader(), catalog.MarkRead, keys, cfg.now()); err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w %s in the store (feed-read lists the entries with their uids)", ErrNoEntry, strings.Join(missing, ", "))
	}
	return nil
}

// show is the text of one entry.
func (l *lister) show(r catalog.EntryRow, e ndjson.Entry, feed string, width int) string {
	var b strings.Builder
	title := clean(entrytext.Title(&e)) // as feed-serve's page says it
	b.WriteString(title + "\n")
	field := func(name, value string) {
		if value = clean(value); value != "" {
			b.WriteString(name + ": " + value + "\n")
		}
	}
	field("Feed", feed)
	date := r.Published.In(l.cfg.loc()).Format("Mon, 2 Jan 2006 15:04 MST")
	if !e.Updated.IsZero() && e.Updated.Time.After(r.Published.Add(time.Minute)) {
		date += " (updated " + e.Updated.Time.In(l.cfg.loc()).Format("Mon, 2 Jan 2006 15:04 MST") + ")"
	}
	field("Date", date)
	var authors []string
	for _, a := range e.Authors {
		if a.Name != "" {
			authors = append(authors, a.Name)
		} else if a.Email != "" {
			authors = append(authors, a.Email)
		}
	}
	field("Author", strings.Join(authors, ", "))
	field("Link", e.CanonicalLink)
	for _, enc := range e.Enclosures {
		s := enc.URL
		if enc.Type != "" {
			s += " (" + enc.Type + ")"
		}
		field("Enclosure", s)
	}
	uid := r.UID
	if r.Starred {
		uid += " (starred)"
	}
	field("Entry", uid)
	body := e.Content
	if strings.TrimSpace(body) == "" {
		body = e.Summary
	}
	base, err := url.Parse(e.CanonicalLink)
	if err != nil || !base.IsAbs() {
		base = nil
	}
	text, links := Text(body, base, width)
	if text != "" {
		b.WriteString("\n" + text)
	}
	if len(links) > 0 {
		b.WriteString("\n")
		for i, u := range links {
			b.WriteString("[" + strconv.Itoa(i+1) + "] " + u + "\n")
		}
	}
	return b.String()
}
