package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"
)

// ConvertWSQS turns the wsqs-rss-archive trace (items.ndjson and
// archive_commits.ndjson of ../shared/corpus/traces) into a workload: one
// feed per source, a post at each item's publication time, and as window
// the number of items the source had in the first archive commit that
// held it (what its feed showed when the archiver added it). Only the
// timestamps are kept; the repository has no licence.
//
// The period starts when every source's posts are complete: a source's
// feed showed items back to some date when it was added, and before the
// latest such date some sources' posts are unknown.
func ConvertWSQS(items, commits io.Reader) (*Workload, error) {
	type item struct {
		Source    string `json:"source_id"`
		Published string `json:"published"`
	}
	type commit struct {
		At      string         `json:"committed_at"`
		Sources map[string]int `json:"items_per_source"`
	}
	byID := map[string]*Feed{}
	w := &Workload{}
	err := eachLine(items, func(b []byte) error {
		var it item
		if err := json.Unmarshal(b, &it); err != nil {
			return err
		}
		t, err := time.Parse(time.RFC3339, it.Published)
		if err != nil || it.Source == "" {
			return fmt.Errorf("item without source_id or RFC 3339 published: %.80s", b)
		}
		f := byID[it.Source]
		if f == nil {
			f = &Feed{ID: it.Source, ETag: true}
			byID[it.Source] = f
			w.Feeds = append(w.Feeds, f)
		}
		f.Posts = append(f.Posts, t.Unix())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sim: wsqs items: %w", err)
	}
	var last time.Time
	err = eachLine(commits, func(b []byte) error {
		var c commit
		if err := json.Unmarshal(b, &c); err != nil {
			return err
		}
		t, err := time.Parse(time.RFC3339, c.At)
		if err != nil {
			return fmt.Errorf("commit without RFC 3339 committed_at: %.80s", b)
		}
		last = t
		for id, n := range c.Sources {
			if f := byID[id]; f != nil && f.Window == 0 {
				f.Window = n
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sim: wsqs commits: %w", err)
	}
	if len(w.Feeds) == 0 || last.IsZero() {
		return nil, fmt.Errorf("sim: wsqs: no items or no commits")
	}
	w.normalize()
	// Complete from the latest of the sources' oldest items, rounded up to
	// the next day.
	var from int64
	for _, f := range w.Feeds {
		from = max(from, f.Posts[0])
	}
	w.Start = time.Unix(from, 0).UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	w.End = last.UTC().Truncate(24 * time.Hour)
	slices.SortFunc(w.Feeds, func(a, b *Feed) int { return strings.Compare(a.ID, b.ID) })
	return w, nil
}

// ConvertSnapshots turns snapshot-item-times.ndjson (the item dates of one
// fetch of each of 38 feeds from parser test corpora) into a workload of
// days days ending at end. Each snapshot is one feed whose window is its
// item count. A snapshot covers from minutes to years, taken between 2005
// and 2024, so its gaps are replayed: the newest item is put just before
// end and the snapshot's gap sequence is repeated back in time, one cycle
// (its span plus a mean gap) after another, until the period and a window
// of history are covered. A cycle of a day or more is rounded up to whole
// days, of a week or more to whole weeks, so that the hours of the day and
// the days of the week of the items are kept. Snapshots with the same
// times (the same feed in two formats) are kept once; snapshots whose
// items all carry one time have no gaps to replay and are left out.
func ConvertSnapshots(r io.Reader, end time.Time, days int) (*Workload, error) {
	type row struct {
		File string `json:"file"`
		UTC  string `json:"utc"`
	}
	byFile := map[string]*Feed{}
	var order []string
	err := eachLine(r, func(b []byte) error {
		var x row
		if err := json.Unmarshal(b, &x); err != nil {
			return err
		}
		if x.File == "" {
			return fmt.Errorf("row without file: %.80s", b)
		}
		f := byFile[x.File]
		if f == nil {
			dir, base := path.Split(x.File)
			project, _, _ := strings.Cut(dir, "/")
			f = &Feed{ID: project + "/" + strings.TrimSuffix(base, path.Ext(base)), ETag: true}
			byFile[x.File] = f
			order = append(order, x.File)
		}
		f.Window++
		if t, err := time.Parse(time.RFC3339, x.UTC); err == nil {
			f.Posts = append(f.Posts, t.Unix())
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sim: snapshots: %w", err)
	}
	w := &Workload{Start: end.Add(-time.Duration(days) * 24 * time.Hour), End: end}
	seen := map[string]bool{}
	for _, file := range order {
		f := byFile[file]
		slices.Sort(f.Posts)
		n := len(f.Posts)
		if n < 2 || f.Posts[n-1] == f.Posts[0] {
			continue
		}
		key := fmt.Sprint(f.Posts)
		if seen[key] {
			continue
		}
		seen[key] = true
		f.Posts = replay(f.Posts, end.Unix()-1, w.Start.Unix(), f.Window)
		w.Feeds = append(w.Feeds, f)
	}
	if len(w.Feeds) == 0 {
		return nil, fmt.Errorf("sim: snapshots: no snapshot with two distinct dates")
	}
	w.normalize()
	return w, nil
}

// replay repeats the gaps of the sorted times ts back from last until
// window items before start.
func replay(ts []int64, last, start int64, window int) []int64 {
	n := len(ts)
	span := ts[n-1] - ts[0]
	cycle := span + span/int64(n-1)
	const day, week = 86400, 7 * 86400
	switch {
	case span >= week:
		cycle = (cycle + week - 1) / week * week
	case span >= day:
		cycle = (cycle + day - 1) / day * day
	}
	var out []int64
	before := 0
	for k := int64(0); before < window; k++ {
		for i := n - 1; i >= 0; i-- {
			t := last - (ts[n-1] - ts[i]) - k*cycle
			out = append(out, t)
			if t < start {
				before++
			}
		}
	}
	slices.Sort(out)
	return out
}

func eachLine(r io.Reader, fn func([]byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		if err := fn(sc.Bytes()); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
	}
	return sc.Err()
}

// UndatedFeed is a feed whose items carry no publication time, as found in
// a corpus: a name and how many items its document holds.
type UndatedFeed struct {
	ID    string
	Items int
}

// Kinds of the no_dates case's feeds (ConvertNoDates).
const (
	KindStatic  = "static"  // shows its items and never changes
	KindPosting = "posting" // posts at real times, served without dates
)

// ConvertNoDates makes the no_dates case: the undated feeds, each showing
// its items (posted a day apart before the period; their times are
// unknown and never served) and then never changing, behind ETags, as
// rdf_UTF8.xml of the shared corpus does when served from a file (kind
// static); and the feeds of posting, with their real posting times, served
// without dates (kind posting). Every feed has no_dates. The period is
// posting's.
func ConvertNoDates(undated []UndatedFeed, posting *Workload) *Workload {
	w := &Workload{Start: posting.Start, End: posting.End}
	start := posting.Start.Unix()
	for _, u := range undated {
		f := &Feed{ID: u.ID, Kind: KindStatic, Window: u.Items, ETag: true, NoDates: true}
		for i := u.Items; i >= 1; i-- {
			f.Posts = append(f.Posts, start-int64(i)*86400)
		}
		w.Feeds = append(w.Feeds, f)
	}
	for _, p := range posting.Feeds {
		f := *p
		f.Kind, f.NoDates = KindPosting, true
		f.Posts = slices.Clone(p.Posts)
		f.Outages = slices.Clone(p.Outages)
		w.Feeds = append(w.Feeds, &f)
	}
	w.normalize()
	return w
}
