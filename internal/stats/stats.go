// Package stats is feed-stats: per-feed and total figures from the store,
// and the Prometheus metrics feed-store writes each cycle. It never touches
// the network.
package stats

import (
	"cmp"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/safetext"
	"github.com/feedpipe/feedpipe/internal/storedir"
	tablefmt "github.com/feedpipe/feedpipe/internal/table"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Row is one feed's figures, or the total (FeedID "total").
type Row struct {
	ndjson.Header               // type "feed_stats"
	FeedID          string      `json:"feed_id"`
	Name            string      `json:"name"`
	URL             string      `json:"url"`
	State           string      `json:"state"`             // enabled, failing, refused, paused or disabled (StatusOf); "" for the total
	Status          string      `json:"status"`            // the same for people, as feed-sub ls says it; "" for the total
	Fetches         int         `json:"fetches"`           // made: those this machine refused to make are Refused, not fetches
	OKRate          float64     `json:"ok_rate"`           // 2xx / fetches
	NotModifiedRate float64     `json:"not_modified_rate"` // 304 / fetches
	ErrorRate       float64     `json:"error_rate"`
	BytesIn         int64       `json:"bytes_in"`
	BytesSaved      int64       `json:"bytes_saved"`
	NewEntries      int         `json:"new_entries"`
	NewPerDay       float64     `json:"new_per_day"`          // over the last Days days, or the days since it was added if fewer (at least one)
	MedianArticle   int         `json:"median_article_bytes"` // content (else summary) of entries stored in the last Days days
	IntervalSec     int         `json:"interval_sec"`         // while polled on an interval (enabled); else 0
	NextFetchAt     ndjson.Time `json:"next_fetch_at"`        // null when feed-due does not list it by itself
	LastError       string      `json:"last_error"`
	// Refused are the fetches this machine refused to make (a private
	// address): no failure of the feed, and not among Fetches.
	Refused int `json:"refused"`
	// LastCycle is feed-loop's last cycle (the heartbeat), on the total
	// row; null on a feed's, and when feed-loop never ran one.
	LastCycle *Heartbeat `json:"last_cycle"`
}

// TypeStats is the record type of feed-stats --json rows.
const TypeStats = "feed_stats"

// Totals are the figures of the whole store.
type Totals struct {
	// Subscriptions by status (StatusOf): Enabled are those in service,
	// not disabled (by hand or by the scheduler), Failing, Refused and
	// Paused among them.
	Enabled, Failing, Refused, Paused, Disabled int
	// Counts are the fetches made (Attempted): without Refusals, the
	// fetches this machine refused to make (an address refused).
	Counts   catalog.FeedCounts
	Refusals int
	// Heartbeat is feed-loop's last cycle; nil when it never ran one.
	Heartbeat *Heartbeat
	// Media are the files of feed-media's queue, by state.
	Media catalog.MediaFigures
}

// NewTotals are the totals of no feed yet, with the store's heartbeat
// and media at now: Add each feed to them.
func NewTotals(ctx context.Context, cat *catalog.Catalog, now time.Time) (Totals, error) {
	m, err := cat.MediaFigures(ctx, now)
	if err != nil {
		return Totals{}, err
	}
	return Totals{Counts: catalog.FeedCounts{ErrorCodes: map[string]int{}}, Heartbeat: LoadHeartbeat(ctx, cat), Media: m}, nil
}

// Compute adds up the feed states of a store at now, a feed at a time.
func Compute(ctx context.Context, cat *catalog.Catalog, now time.Time) (Totals, error) {
	t, err := NewTotals(ctx, cat, now)
	if err != nil {
		return t, err
	}
	err = cat.Feeds(ctx, catalog.FeedFilter{}, func(f *catalog.Feed) error {
		t.add(f, StatusOf(f.Sub, f.State, now))
		return nil
	})
	return t, err
}

// add counts one feed, of status st.
func (t *Totals) add(f *catalog.Feed, st Status) {
	switch st.State {
	case StateDisabled:
		t.Disabled++
	case StateFailing:
		t.Failing++
		t.Enabled++
	case StateRefused:
		t.Refused++
		t.Enabled++
	case StatePaused:
		t.Paused++
		t.Enabled++
	default:
		t.Enabled++
	}
	c, refused := Attempted(f.State.Counts)
	t.Refusals += refused
	t.Counts.Fetches += c.Fetches
	t.Counts.OK += c.OK
	t.Counts.NotModified += c.NotModified
	t.Counts.Errors += c.Errors
	t.Counts.BytesIn += c.BytesIn
	t.Counts.BytesSaved += c.BytesSaved
	t.Counts.DurationMS += c.DurationMS
	t.Counts.NewEntries += c.NewEntries
	t.Counts.Updated += c.Updated
	for code, n := range c.ErrorCodes {
		t.Counts.ErrorCodes[code] += n
	}
}

// refusedCode is the error code of a fetch this machine refused to make
// (httpx.CodeAddressRefused).
const refusedCode = "address_refused"

// Attempted are the counts of the fetches made of c: without those this
// machine refused to make (an address it refuses), which asked nothing of
// the publisher and are no failure of the feed, as the scheduler counts
// none; refused is how many there were. feed-stats's rates and the
// metrics count so, and so should any other count of failures.
func Attempted(c catalog.FeedCounts) (attempted catalog.FeedCounts, refused int) {
	refused = c.ErrorCodes[refusedCode]
	if refused == 0 {
		return c, 0
	}
	c.Fetches -= refused
	c.Errors -= refused
	codes := make(map[string]int, len(c.ErrorCodes))
	for code, n := range c.ErrorCodes {
		if code != refusedCode {
			codes[code] = n
		}
	}
	c.ErrorCodes = codes
	return c, refused
}

// Format is how Run writes its rows.
type Format int

const (
	Table Format = iota
	NDJSON
	CSV
)

// Config is everything feed-stats touches.
type Config struct {
	Out     io.Writer
	Store   *storedir.Store
	Catalog *catalog.Catalog // the store's catalog; nil: opened for the run
	Now     time.Time
	Days    int // window of new_per_day and median_article_bytes
	Format  Format
	// Width, when set, is the terminal's: the table fits it, its names
	// and statuses cut to fit.
	Width int
}

// Run writes a row per subscription and a total row.
func Run(cfg Config) error {
	if cfg.Days <= 0 {
		cfg.Days = 7
	}
	ctx := context.Background()
	cat, done, err := catalog.Use(ctx, cfg.Catalog, cfg.Store, nil)
	if err != nil {
		return err
	}
	defer done()
	recent, err := recentEntries(cfg.Store, cfg.Now, cfg.Days)
	if err != nil {
		return err
	}
	var rows []Row
	var allSizes []int
	t := Totals{Counts: catalog.FeedCounts{ErrorCodes: map[string]int{}}}
	err = cat.Feeds(ctx, catalog.FeedFilter{}, func(f *catalog.Feed) error {
		s, st := f.Sub, f.State
		status := StatusOf(s, st, cfg.Now)
		t.add(f, status)
		c, refused := Attempted(st.Counts)
		r := row(c, heldDays(s, cfg.Now, cfg.Days), recent[s.FeedID])
		r.Refused = refused
		r.FeedID, r.Name, r.URL = s.FeedID, cmp.Or(s.Name, st.Title), s.URL
		r.State, r.Status, r.IntervalSec = status.State, status.Text, status.IntervalSec
		if status.Listed {
			r.NextFetchAt = ndjson.At(status.Next)
		}
		if st.LastError != nil {
			r.LastError = st.LastError.Code + ": " + st.LastError.Message
		}
		rows = append(rows, r)
		allSizes = append(allSizes, recent[s.FeedID].sizes...)
		return nil
	})
	if err != nil {
		return err
	}
	var all feedRecent
	for _, fr := range recent {
		all.newEntries += fr.newEntries
	}
	all.sizes = allSizes
	total := row(t.Counts, float64(cfg.Days), all)
	total.FeedID, total.Refused = "total", t.Refusals
	// The store's rate is its feeds' together, each over its own days.
	total.NewPerDay = 0
	for _, r := range rows {
		total.NewPerDay += r.NewPerDay
	}
	total.LastCycle = LoadHeartbeat(ctx, cat)
	rows = append(rows, total)
	return write(cfg, rows)
}

// heldDays is the window a feed's new entries per day are counted over:
// the last days days, or the days since it was added when it is younger
// (at least one: a feed added an hour ago is not said to post 24 times
// what it brought).
func heldDays(s ndjson.Subscription, now time.Time, days int) float64 {
	window := float64(days)
	if s.CreatedAt.IsZero() {
		return window
	}
	held := now.Sub(s.CreatedAt.Time).Hours() / 24
	return min(window, max(1, held))
}

func row(c catalog.FeedCounts, days float64, fr feedRecent) Row {
	r := Row{Header: ndjson.Head(TypeStats), Fetches: c.Fetches, BytesIn: c.BytesIn, BytesSaved: c.BytesSaved, NewEntries: c.NewEntries}
	if c.Fetches > 0 {
		n := float64(c.Fetches)
		r.OKRate, r.NotModifiedRate, r.ErrorRate = float64(c.OK)/n, float64(c.NotModified)/n, float64(c.Errors)/n
	}
	r.NewPerDay = float64(fr.newEntries) / days
	r.MedianArticle = median(fr.sizes)
	return r
}

// feedRecent is what the last days' entries files say of one feed.
type feedRecent struct {
	newEntries int
	sizes      []int
}

// recentEntries reads the entries files of the last days: new entries and
// article sizes per feed.
func recentEntries(st *storedir.Store, now time.Time, days int) (map[string]feedRecent, error) {
	out := map[string]feedRecent{}
	for d := range days {
		key := storedir.DayFile(storedir.DirEntries, now.AddDate(0, 0, -d))
		_, _, err := st.ReadLog(key, 0, func(l ndjson.Line) error {
			var e ndjson.Entry
			if l.Type != ndjson.TypeEntry || l.Decode(&e) != nil {
				return nil
			}
			fr := out[e.FeedID]
			if e.Status == ndjson.StatusNew {
				fr.newEntries++
			}
			fr.sizes = append(fr.sizes, len(cmp.Or(e.Content, e.Summary)))
			out[e.FeedID] = fr
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func median(v []int) int {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func write(cfg Config, rows []Row) error {
	switch cfg.Format {
	case NDJSON:
		w := ndjson.NewWriter(cfg.Out)
		for i := range rows {
			if err := w.Write(&rows[i]); err != nil {
				return err
			}
		}
		return w.Flush()
	case CSV:
		w := csv.NewWriter(cfg.Out)
		w.Write([]string{"feed_id", "name", "url", "state", "fetches", "ok_rate", "not_modified_rate", "error_rate", "bytes_in", "bytes_saved",
			"new_entries", "new_per_day", "median_article_bytes", "interval_sec", "next_fetch_at", "last_error", "status", "refused"})
		for _, r := range rows {
			w.Write([]string{r.FeedID, r.Name, r.URL, r.State, strconv.Itoa(r.Fetches), ratio(r.OKRate), ratio(r.NotModifiedRate), ratio(r.ErrorRate),
				strconv.FormatInt(r.BytesIn, 10), strconv.FormatInt(r.BytesSaved, 10), strconv.Itoa(r.NewEntries),
				strconv.FormatFloat(r.NewPerDay, 'f', 2, 64), strconv.Itoa(r.MedianArticle), strconv.Itoa(r.IntervalSec), r.NextFetchAt.String(), r.LastError, r.Status, strconv.Itoa(r.Refused)})
		}
		w.Flush()
		return w.Error()
	}
	// Numbers right-aligned, words left; to fit a terminal, the name and
	// the status are cut. The status ends with the last error's code when
	// it does not say it (--json and --csv have the whole last_error).
	table := [][]string{{"FEED ID", "NAME", "FETCHES", "OK", "304", "ERR", "IN", "SAVED", "NEW", "NEW/DAY", "MEDIAN", "INTERVAL", "STATUS"}}
	for _, r := range rows {
		id := r.FeedID
		if len(id) > 8 {
			id = id[:8]
		}
		interval := "-"
		if r.IntervalSec > 0 {
			interval = (time.Duration(r.IntervalSec) * time.Second).String()
		}
		status := r.Status
		if code, _, _ := strings.Cut(r.LastError, ":"); code != "" && !strings.Contains(status, code) {
			status += ", last error " + code
		}
		table = append(table, []string{id, safetext.Cell(r.Name, 30), strconv.Itoa(r.Fetches), pct(r.OKRate), pct(r.NotModifiedRate), pct(r.ErrorRate),
			size(r.BytesIn), size(r.BytesSaved), strconv.Itoa(r.NewEntries), fmt.Sprintf("%.1f", r.NewPerDay), size(int64(r.MedianArticle)), interval,
			safetext.Cell(status, 80)})
	}
	num := tablefmt.Col{Right: true}
	cols := []tablefmt.Col{{}, {Min: 12}, num, num, num, num, num, num, num, num, num, num, {Min: 16}}
	if err := tablefmt.Write(cfg.Out, table, cols, cfg.Width); err != nil {
		return err
	}
	if hb := rows[len(rows)-1].LastCycle; hb != nil {
		_, err := io.WriteString(cfg.Out, wrap(hb.Text(cfg.Now), cfg.Width))
		return err
	}
	return nil
}

// wrap breaks s at spaces into lines of at most width columns (0: one
// line), the lines after the first indented by two.
func wrap(s string, width int) string {
	if width <= 0 || tablefmt.Width(s) <= width {
		return s + "\n"
	}
	var b strings.Builder
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && tablefmt.Width(line)+1+tablefmt.Width(w) > width {
			b.WriteString(line + "\n")
			line = "  " + w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return b.String() + line + "\n"
}

func ratio(f float64) string { return strconv.FormatFloat(f, 'f', 4, 64) }
func pct(f float64) string   { return fmt.Sprintf("%.0f%%", 100*f) }

// size renders a byte count the way people read it: 812B, 4.2K, 13M, 1.1G.
func size(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%dB", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1fK", float64(n)/1024)
	case n < 1<<30:
		return fmt.Sprintf("%.1fM", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%.1fG", float64(n)/(1<<30))
	}
}
