// Package read is feed-read: stored entries listed, shown and marked read
// or starred from a terminal, by a reader's name.
package read

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/entrytext"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/table"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Format is how Run writes the entries it lists.
type Format int

const (
	// Terminal: a line per entry, its columns fitted to Config.Width.
	Terminal Format = iota
	// TSV: a line per entry, tab-separated (TSVColumns).
	TSV
	// JSON: an Item per entry, one JSON object a line.
	JSON
)

// TSVColumns are the columns of the TSV format, in order. A field's
// backslashes, tabs, newlines and carriage returns are written \\, \t, \n
// and \r, and other control characters are dropped, so that a record is
// always one line (as sfeed does).
var TSVColumns = []string{"date", "feed", "title", "link", "entry_uid", "feed_id", "read", "starred"}

// Config is everything feed-read touches.
type Config struct {
	Out     io.Writer
	Err     io.Writer // messages for people: what mark did, uids it did not find
	Store   *storedir.Store
	Catalog *catalog.Catalog // the store's catalog; nil: opened for the run
	Log     *slog.Logger     // nil: none
	Now     func() time.Time // nil: time.Now
	// Location is the time zone of the dates on a terminal and in show;
	// nil: time.Local. TSV and JSON are in UTC.
	Location *time.Location
	// Reader is whose marks are read and set; "": the one user of the
	// Google Reader API when there is exactly one, else
	// catalog.DefaultReader.
	Reader string
	Format Format
	// Width is the terminal's width in columns (Terminal; show wraps its
	// text to it, at most 100); 0: 80 for the list, 72 for show.
	Width int

	// What Run lists.
	Feed    string // a feed id, URL or name (catalog.FindFeed)
	Label   string
	Since   time.Time
	Until   time.Time
	Grep    string // full-text search: every word (catalog.EntryQuery.Text)
	Unread  bool
	Starred bool
	Order   string // catalog.OrderPublished (""), or catalog.OrderFirstSeen
	// Limit is the most entries listed; 0 lists them all.
	Limit int
	// New lists the entries first seen since the reader's last New (by
	// first_seen: Order must be "" or first_seen, Since zero), the last
	// NewWindow on the first, and moves the reader's cursor to the newest
	// listed.
	New bool
}

// NewWindow is how far back the first --new of a reader looks.
const NewWindow = 24 * time.Hour

// Errors Run and the others return for what the user asked, which
// feed-read reports as usage errors.
var (
	ErrUsage = errors.New("usage")
)

// Item is a line of --json: the entry's stored record, as entries/ holds
// its latest version, with the feed's name and the reader's marks. It is
// not a record of pkg/ndjson: it does not go down the pipeline (its entry
// does).
type Item struct {
	Entry    json.RawMessage `json:"entry"`
	FeedName string          `json:"feed_name"`
	Reader   string          `json:"reader"`
	Read     bool            `json:"read"`
	Starred  bool            `json:"starred"`
}

func (cfg *Config) now() time.Time {
	if cfg.Now != nil {
		return cfg.Now()
	}
	return time.Now()
}

func (cfg *Config) reader() string {
	if cfg.Reader == "" {
		return catalog.DefaultReader
	}
	return cfg.Reader
}

func (cfg *Config) loc() *time.Location {
	if cfg.Location == nil {
		return time.Local
	}
	return cfg.Location
}

func (cfg *Config) logger() *slog.Logger {
	if cfg.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return cfg.Log
}

func usagef(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUsage}, args...)...)
}

// open returns the catalog and what closes it. A Config that names no
// reader reads, from then on, as the one user of the Google Reader API
// when there is exactly one (the person who also reads in an app), else
// as catalog.DefaultReader.
func (cfg *Config) open(ctx context.Context) (*catalog.Catalog, func(), error) {
	cat, done, err := catalog.Use(ctx, cfg.Catalog, cfg.Store, cfg.Log)
	if err != nil || cfg.Reader != "" {
		return cat, done, err
	}
	users, err := cat.Users(ctx)
	if err != nil {
		done()
		return nil, nil, err
	}
	cfg.Reader = catalog.DefaultReader
	if len(users) == 1 {
		cfg.Reader = users[0].Name
	}
	return cat, done, nil
}

// Run lists the entries cfg selects, newest first.
func Run(ctx context.Context, cfg Config) error {
	if err := catalog.CheckReader(cfg.reader()); err != nil {
		return usagef("--reader: %v", err)
	}
	if cfg.New && !cfg.Since.IsZero() {
		return usagef("--new and --since: choose one (--new lists what arrived since the last --new)")
	}
	if cfg.New && cfg.Order == catalog.OrderPublished {
		return usagef("--new lists by first_seen, the time entries arrived: --order published does not go with it")
	}
	if cfg.Feed != "" && cfg.Label != "" {
		return usagef("--feed and --label: choose one")
	}
	if cfg.Limit < 0 {
		return usagef("--limit %d: it is at least 0 (0: no limit)", cfg.Limit)
	}
	cat, done, err := cfg.open(ctx)
	if err != nil {
		return err
	}
	defer done()

	q := catalog.EntryQuery{Order: cfg.Order, Since: cfg.Since, Until: cfg.Until, Text: cfg.Grep, Reader: cfg.reader(), Unread: cfg.Unread, Starred: cfg.Starred}
	if cfg.New {
		q.Order = catalog.OrderFirstSeen
		since, ok, err := cat.NewSince(ctx, cfg.reader())
		if err != nil {
			return err
		}
		if ok {
			q.Since = since.Add(time.Millisecond)
		} else {
			q.Since = cfg.now().Add(-NewWindow)
		}
	}
	var feedID string
	if cfg.Feed != "" {
		if feedID, err = cat.FindFeed(ctx, cfg.Feed); err != nil {
			return usagef("--feed: %v", err)
		}
	}
	page := func(q catalog.EntryQuery) (catalog.EntryPage, error) {
		return cat.ReaderEntries(ctx, feedID, cfg.Label, q)
	}

	out := bufio.NewWriterSize(cfg.Out, 64<<10)
	l := &lister{cfg: &cfg, cat: cat, out: out}
	var newest time.Time
	listed := 0
	for {
		q.Limit = catalog.MaxLimit
		if cfg.Limit > 0 {
			q.Limit = min(catalog.MaxLimit, cfg.Limit-listed)
		}
		p, err := page(q)
		if errors.Is(err, catalog.ErrBadQuery) {
			return usagef("%s", strings.TrimPrefix(err.Error(), "catalog: "))
		}
		if err != nil {
			return err
		}
		if listed == 0 && len(p.Entries) == 0 && cfg.Label != "" {
			if ok, err := cat.HasLabel(ctx, cfg.Label); err != nil {
				return err
			} else if !ok {
				return usagef("--label %q: no subscription has it (see feed-sub ls)", cfg.Label)
			}
		}
		for _, r := range p.Entries {
			if r.FirstSeen.After(newest) {
				newest = r.FirstSeen
			}
		}
		if err := l.write(ctx, p.Entries); err != nil {
			return err
		}
		listed += len(p.Entries)
		if p.Next == "" || (cfg.Limit > 0 && listed >= cfg.Limit) {
			break
		}
		q.Cursor = p.Next
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	if cfg.New {
		// The first --new with nothing to list still starts the cursor,
		// at the start of its window.
		if listed == 0 {
			if _, ok, _ := cat.NewSince(ctx, cfg.reader()); ok {
				return nil
			}
			newest = q.Since.Add(-time.Millisecond)
		}
		if err := cat.NewSeen(ctx, cfg.reader(), newest); err != nil {
			return err
		}
	}
	return nil
}

// lister writes pages of entries in the format asked for.
type lister struct {
	cfg *Config
	cat *catalog.Catalog
	out *bufio.Writer
}

// line is what a listing shows of an entry.
type line struct {
	row   catalog.EntryRow
	raw   []byte
	entry ndjson.Entry
	feed  string
	ok    bool // its record was read
}

func (l *lister) write(ctx context.Context, rows []catalog.EntryRow) error {
	if len(rows) == 0 {
		return nil
	}
	ids := make([]string, 0, len(rows))
	for _, r := range rows {
		ids = append(ids, r.FeedID)
	}
	names, err := l.cat.FeedNames(ctx, ids)
	if err != nil {
		return err
	}
	lines := make([]line, len(rows))
	for i, r := range rows {
		ln := &lines[i]
		ln.row, ln.feed = r, names[r.FeedID]
		if ln.feed == "" {
			ln.feed = r.FeedID
		}
		ln.raw, ln.entry, err = l.record(r)
		if err != nil {
			// A line pruned or damaged under a catalog not yet told: the
			// entry is listed with what the catalog has.
			l.cfg.logger().Warn("entry record unreadable", "entry_uid", r.UID, "feed_id", r.FeedID, "err", err)
			continue
		}
		ln.ok = true
	}
	switch l.cfg.Format {
	case JSON:
		return l.json(lines)
	case TSV:
		return l.tsv(lines)
	}
	return l.terminal(lines)
}

// record reads an entry's stored line and its record.
func (l *lister) record(r catalog.EntryRow) ([]byte, ndjson.Entry, error) {
	var e ndjson.Entry
	raw, err := l.cat.Line(storedir.DirEntries, r.Location)
	if err != nil {
		return nil, e, err
	}
	if err := ndjson.Unmarshal(raw, &e); err != nil || e.EntryUID != r.UID {
		return nil, e, fmt.Errorf("the line of entry %s in entries/%s.ndjson is not its record: rebuild the catalog with feed-store reindex", r.UID, r.Day)
	}
	return raw, e, nil
}

// date is the time an entry is listed by.
func (l *lister) date(r catalog.EntryRow) time.Time {
	if l.cfg.New || l.cfg.Order == catalog.OrderFirstSeen {
		return r.FirstSeen
	}
	return r.Published
}

func (l *lister) json(lines []line) error {
	for _, ln := range lines {
		if !ln.ok {
			continue
		}
		b, err := json.Marshal(Item{Entry: ln.raw, FeedName: ln.feed, Reader: l.cfg.reader(), Read: ln.row.Read, Starred: ln.row.Starred})
		if err != nil {
			return err
		}
		l.out.Write(append(b, '\n'))
	}
	return nil
}

func (l *lister) tsv(lines []line) error {
	for _, ln := range lines {
		f := []string{l.date(ln.row).UTC().Format(time.RFC3339), ln.feed, ln.entry.Title, ln.entry.CanonicalLink, ln.row.UID, ln.row.FeedID, bit(ln.row.Read), bit(ln.row.Starred)}
		for i := range f {
			f[i] = tsvField(f[i])
		}
		l.out.WriteString(strings.Join(f, "\t") + "\n")
	}
	return nil
}

func bit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

var tsvEscape = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`)

// tsvField escapes a field for a TSV line (TSVColumns).
func tsvField(s string) string {
	s = strings.Map(func(r rune) rune {
		if isControl(r) && r != '\t' && r != '\n' && r != '\r' {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	return tsvEscape.Replace(s)
}

// Terminal columns: marks, date, uid, feed, title, link.
const (
	dateLayout = "2006-01-02 15:04"
	markWidth  = 2
	uidWidth   = 16
	gap        = 2
)

// terminal writes a line per entry: its marks ("N" unread, "*" starred),
// date, uid, feed, title and link, fitted to the width: when they do not
// all fit, the feed's name takes up to a quarter, the title the rest, and
// the link what the titles leave if that is 20 columns (else, given 60
// columns for both, two fifths of them; else none).
func (l *lister) terminal(lines []line) error {
	w := l.cfg.Width
	if w <= 0 {
		w = 80
	}
	fixed := markWidth + 1 + len(dateLayout) + 1 + uidWidth + gap
	rest := max(w-fixed, 20)
	feedW, titleW, linkW := 0, 0, 0
	for _, ln := range lines {
		feedW = max(feedW, table.Width(clean(ln.feed)))
		titleW = max(titleW, table.Width(clean(entrytext.Title(&ln.entry))))
		linkW = max(linkW, table.Width(clean(ln.entry.CanonicalLink)))
	}
	if feedW+gap+titleW > rest {
		feedW = min(feedW, max(10, rest/4), 24)
	}
	r := rest - feedW - gap
	titleW = min(titleW, r)
	switch {
	case linkW == 0:
	case r-titleW-gap >= min(linkW, 20):
		linkW = min(linkW, r-titleW-gap)
	case r >= 60:
		linkW = min(linkW, r*2/5)
		titleW = r - linkW - gap
	default:
		linkW = 0
	}
	if linkW == 0 {
		titleW = r
	}
	for _, ln := range lines {
		marks := []byte("  ")
		if !ln.row.Read {
			marks[0] = 'N'
		}
		if ln.row.Starred {
			marks[1] = '*'
		}
		title := clean(entrytext.Title(&ln.entry)) // as feed-serve's page says it
		s := string(marks) + " " + l.date(ln.row).In(l.cfg.loc()).Format(dateLayout) + " " + ln.row.UID + strings.Repeat(" ", gap) +
			pad(clean(ln.feed), feedW) + strings.Repeat(" ", gap)
		if linkW > 0 {
			s += pad(title, titleW) + strings.Repeat(" ", gap) + table.Cut(clean(ln.entry.CanonicalLink), linkW, false)
		} else {
			s += table.Cut(title, titleW, false)
		}
		l.out.WriteString(strings.TrimRight(s, " ") + "\n")
	}
	return nil
}

// checkUID reports whether s is an entry uid: 16 lower-case hex digits.
func checkUID(s string) bool {
	if len(s) != 16 {
		return false
	}
	_, err := strconv.ParseUint(s, 16, 64)
	return err == nil && strings.ToLower(s) == s
}
