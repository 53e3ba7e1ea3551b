package storage

import (
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// StateFile is the key of the feed state log.
const StateFile = DirState + "/feeds.ndjson"

// TypeFeedState is the record type of a state log line.
const TypeFeedState = "feed_state"

// FeedState is what feed-store remembers about one feed between fetches, and
// what feed-due schedules from. The state log holds one line per update; the
// last line of a feed wins.
type FeedState struct {
	ndjson.Header
	FeedID              string            `json:"feed_id"`
	Title               string            `json:"title"`
	Validators          ndjson.Validators `json:"validators"`
	LastFetchAt         ndjson.Time       `json:"last_fetch_at"`
	LastSuccessAt       ndjson.Time       `json:"last_success_at"`
	LastStatus          int               `json:"last_status"`
	LastError           *ndjson.Error     `json:"last_error"`
	ConsecutiveFailures int               `json:"consecutive_failures"`
	IntervalSec         int               `json:"interval_sec"`
	NextFetchAt         ndjson.Time       `json:"next_fetch_at"`
	LastBodySHA256      string            `json:"last_body_sha256"`
	LastContentLength   int64             `json:"last_content_length"`
	NewEntriesLastFetch int               `json:"new_entries_last_fetch"`
	// MovedTo and MovedCount: the URL the last fetches were moved to
	// permanently, and how many in a row.
	MovedTo    string `json:"moved_to"`
	MovedCount int    `json:"moved_count"`
	// Counts add up everything since the feed was first fetched.
	Counts FeedCounts `json:"counts"`
	// Sched is the scheduler's state (internal/sched, docs/scheduler.md
	// §6); nil before the first decision. NextFetchAt and IntervalSec
	// repeat its next_at and interval_sec.
	Sched *sched.State `json:"sched,omitempty"`
	// Decision is the scheduler's last decision, for feed-due --explain.
	Decision *sched.Decision `json:"decision,omitempty"`
}

// FeedCounts add up a feed's fetches, for feed-stats and metrics.
type FeedCounts struct {
	Fetches     int            `json:"fetches"`
	OK          int            `json:"ok"` // 2xx, including unchanged bodies
	NotModified int            `json:"not_modified"`
	Errors      int            `json:"errors"`
	ErrorCodes  map[string]int `json:"error_codes"`
	BytesIn     int64          `json:"bytes_in"`    // bodies received, decoded
	BytesSaved  int64          `json:"bytes_saved"` // bodies 304 answers spared
	DurationMS  int64          `json:"duration_ms"` // summed
	NewEntries  int            `json:"new_entries"`
	Updated     int            `json:"updated"`
}

// Add counts one fetch.
func (c *FeedCounts) Add(f *ndjson.Fetch) {
	c.Fetches++
	c.DurationMS += f.DurationMS
	c.BytesIn += f.ContentLength
	c.BytesSaved += f.BytesSaved
	switch {
	case f.Error != nil:
		c.Errors++
		if c.ErrorCodes == nil {
			c.ErrorCodes = map[string]int{}
		}
		c.ErrorCodes[f.Error.Code]++
	case f.NotModified:
		c.NotModified++
	default:
		c.OK++
	}
}

// States is the state of every feed, loaded from the state log.
type States struct {
	s      *Store
	ByFeed map[string]FeedState
	lines  int
	// snapLines is how many of the lines the snapshot covers.
	snapLines int
}

// States loads the state log: from its snapshot (see SnapshotMinBytes) and
// the lines appended since, or all of it.
func (s *Store) States() (*States, error) {
	st := &States{s: s, ByFeed: map[string]FeedState{}}
	f, err := s.openLog(StateFile)
	if err != nil || f == nil {
		return st, err
	}
	defer f.Close()
	from := int64(0)
	if snap, ok := loadSnapshot[FeedState](s, snapshotStates, f); ok {
		defer snap.close()
		st.ByFeed = make(map[string]FeedState, snap.head.Lines+snap.head.Lines/8)
		err := eachSnapshotRecord(snap, func(fs *FeedState) { st.ByFeed[fs.FeedID] = *fs })
		if err == nil {
			st.lines, st.snapLines, from = snap.head.Lines, snap.head.Lines, snap.head.Covered
		} else {
			st.ByFeed = map[string]FeedState{}
		}
	}
	tail := 0
	end, _, err := readLog(f, StateFile, from, func(l ndjson.Line) error {
		var fs FeedState
		if l.Type != TypeFeedState || l.Decode(&fs) != nil || fs.FeedID == "" {
			return nil
		}
		st.lines++
		tail++
		st.ByFeed[fs.FeedID] = fs
		return nil
	})
	if err == nil && tail > snapshotMaxTail+len(st.ByFeed)/64 {
		writeSnapshot(s, snapshotStates, f, end, st.lines, 0, len(st.ByFeed), st.each())
		st.snapLines = st.lines
	}
	return st, err
}

// snapshotStates names the state log's snapshot.
const snapshotStates = "states"

// sorted returns every feed's state, by feed id.
func (st *States) sorted() []FeedState {
	all := make([]FeedState, 0, len(st.ByFeed))
	for _, fs := range st.ByFeed {
		all = append(all, fs)
	}
	slices.SortFunc(all, func(a, b FeedState) int { return strings.Compare(a.FeedID, b.FeedID) })
	return all
}

// Put records new states. When the log has grown to more than twice the
// number of feeds it is rewritten, durably, with one line per feed.
func (st *States) Put(d Durability, states ...FeedState) error {
	if len(states) == 0 {
		return nil
	}
	for i := range states {
		states[i].Header = ndjson.Head(TypeFeedState)
		st.ByFeed[states[i].FeedID] = states[i]
	}
	if st.lines+len(states) > 2*len(st.ByFeed)+1024 {
		return st.compact()
	}
	data, err := encodeLines(states)
	if err != nil {
		return err
	}
	off, err := st.s.AppendLines(StateFile, data, d)
	if err != nil {
		return err
	}
	st.lines += len(states)
	// The writer keeps the snapshot close behind the log, so that no
	// reader decodes more than a cycle or so of JSON lines.
	if st.lines-st.snapLines > 1024+len(st.ByFeed)/256 {
		st.snapshot(off + int64(len(data)))
	}
	return nil
}

// snapshot saves the states as the snapshot of the log up to covered: the
// end of this writer's last append, the caller holding the store lock.
func (st *States) snapshot(covered int64) {
	st.snapLines = st.lines
	f, err := st.s.openLog(StateFile)
	if err != nil || f == nil {
		return
	}
	defer f.Close()
	writeSnapshot(st.s, snapshotStates, f, covered, st.lines, 0, len(st.ByFeed), st.each())
}

// each yields every feed's state, in no order.
func (st *States) each() iter.Seq[*FeedState] {
	return func(yield func(*FeedState) bool) {
		for _, fs := range st.ByFeed {
			if !yield(&fs) {
				return
			}
		}
	}
}

func (st *States) compact() error {
	all := st.sorted()
	data, err := encodeLines(all)
	if err != nil {
		return err
	}
	if err := st.s.WriteFileAtomic(StateFile, data); err != nil {
		return fmt.Errorf("storage: compact state: %w", err)
	}
	st.lines = len(all)
	// The old snapshot is of the old file: save one of the new.
	st.snapshot(int64(len(data)))
	return nil
}
