package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The run ledgers make feed-fetch idempotent per feed and scheduled run
// (seed 000 §15) and feed-store idempotent per fetch. Each is 256 small
// text files sharded by the first two characters of the feed id, one
// tab-separated line per fetch, the last line of a feed winning:
//
//	ledger/fetched/<2 hex>.tsv  feed-fetch, under the fetch lock:
//	    feed_id  scheduled_at  fetch_id  fetched_at  offset
//	    (offset: where the fetch record begins in its fetches/ day file)
//	ledger/stored/<2 hex>.tsv   feed-store, under the store lock:
//	    feed_id  fetch_id  fetched_at
//
// A shard is read only when a record of one of its feeds comes, so a
// stage's start-up costs nothing, and a shard grown past a few lines per
// feed is rewritten with its last line per feed. A line is appended only
// after what it vouches for is durable (the fetch record; the feed's
// state), so a lost line makes a stage do a fetch again, never skip one it
// has not done.
const (
	DirLedger     = "ledger"
	ledgerFetched = DirLedger + "/fetched"
	ledgerStored  = DirLedger + "/stored"
)

// Run is one scheduled run of a feed that feed-fetch fetched.
type Run struct {
	FeedID      string
	ScheduledAt time.Time
	FetchID     string
	FetchedAt   time.Time
	Offset      int64 // of the fetch record in its fetches/ day file
}

// Committed is the last fetch of a feed that feed-store committed.
type Committed struct {
	FeedID    string
	FetchID   string
	FetchedAt time.Time
}

func ledgerShard(dir, feedID string) string {
	shard := "xx"
	if len(feedID) >= 2 && isHex(feedID[:2]) {
		shard = strings.ToLower(feedID[:2])
	}
	return dir + "/" + shard + ".tsv"
}

func isHex(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

// Ledger is the in-memory view of a run ledger's shards, loaded one shard
// at a time as feeds are asked about. It is not safe for concurrent use.
type Ledger struct {
	s *Store
	// storeLocked: the caller holds the store lock, so the stored ledger
	// may be compacted (feed-store); feed-fetch only reads it.
	storeLocked bool
	fetched     map[string]map[string]Run       // shard key -> feed id -> last run
	stored      map[string]map[string]Committed // shard key -> feed id -> last commit
}

// Ledger returns an empty view of the store's run ledgers. storeLocked
// says that the caller holds the store lock (feed-store).
func (s *Store) Ledger(storeLocked bool) *Ledger {
	return &Ledger{s: s, storeLocked: storeLocked, fetched: map[string]map[string]Run{}, stored: map[string]map[string]Committed{}}
}

// LastRun returns the last run of the feed that feed-fetch recorded.
func (l *Ledger) LastRun(feedID string) (Run, bool, error) {
	key := ledgerShard(ledgerFetched, feedID)
	shard, ok := l.fetched[key]
	if !ok {
		var err error
		if shard, err = l.loadFetched(key); err != nil {
			return Run{}, false, err
		}
		l.fetched[key] = shard
	}
	r, ok := shard[feedID]
	return r, ok, nil
}

// LastCommitted returns the last fetch of the feed that feed-store
// committed.
func (l *Ledger) LastCommitted(feedID string) (Committed, bool, error) {
	key := ledgerShard(ledgerStored, feedID)
	shard, ok := l.stored[key]
	if !ok {
		var err error
		if shard, err = l.loadStored(key); err != nil {
			return Committed{}, false, err
		}
		l.stored[key] = shard
	}
	c, ok := shard[feedID]
	return c, ok, nil
}

// IsCommitted reports whether feed-store has committed the fetch of a feed
// made at fetchedAt, or a later one (which supersedes it: a feed's state
// only moves forward). fetchID is not compared: fetched_at says it all.
func (l *Ledger) IsCommitted(feedID, fetchID string, fetchedAt time.Time) (bool, error) {
	c, ok, err := l.LastCommitted(feedID)
	if err != nil || !ok {
		return false, err
	}
	return !c.FetchedAt.Before(fetchedAt), nil
}

// NoteCommitted records a commit in memory only (RecordCommitted writes
// it).
func (l *Ledger) NoteCommitted(c Committed) {
	if shard, ok := l.stored[ledgerShard(ledgerStored, c.FeedID)]; ok {
		if old, ok := shard[c.FeedID]; !ok || !c.FetchedAt.Before(old.FetchedAt) {
			shard[c.FeedID] = c
		}
	}
}

// compactAt is how many lines per feed a shard may hold before it is
// rewritten with one.
const compactAt = 4

func (l *Ledger) loadFetched(key string) (map[string]Run, error) {
	shard := map[string]Run{}
	lines, err := l.s.readLedger(key, func(f []string) {
		if len(f) != 5 {
			return
		}
		r := Run{FeedID: f[0], FetchID: f[2]}
		var err1, err2, err3 error
		r.ScheduledAt, err1 = time.Parse(time.RFC3339Nano, f[1])
		r.FetchedAt, err2 = time.Parse(time.RFC3339Nano, f[3])
		r.Offset, err3 = strconv.ParseInt(f[4], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return
		}
		if old, ok := shard[r.FeedID]; !ok || !r.ScheduledAt.Before(old.ScheduledAt) {
			shard[r.FeedID] = r
		}
	})
	if err != nil || lines <= compactAt*len(shard)+64 {
		return shard, err
	}
	unlock, err := l.s.Lock(FetchLock, true, nil)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var buf bytes.Buffer
	for _, r := range shard {
		buf.WriteString(runLine(r))
	}
	// Lines appended since the read above: keep them after the rest.
	return shard, l.s.rewriteLedger(key, lines, buf.Bytes())
}

func (l *Ledger) loadStored(key string) (map[string]Committed, error) {
	shard := map[string]Committed{}
	lines, err := l.s.readLedger(key, func(f []string) {
		if len(f) != 3 {
			return
		}
		t, err := time.Parse(time.RFC3339Nano, f[2])
		if err != nil {
			return
		}
		c := Committed{FeedID: f[0], FetchID: f[1], FetchedAt: t}
		if old, ok := shard[c.FeedID]; !ok || !c.FetchedAt.Before(old.FetchedAt) {
			shard[c.FeedID] = c
		}
	})
	if err != nil || !l.storeLocked || lines <= compactAt*len(shard)+64 {
		return shard, err
	}
	var buf bytes.Buffer
	for _, c := range shard {
		buf.WriteString(committedLine(c))
	}
	return shard, l.s.rewriteLedger(key, lines, buf.Bytes())
}

// readLedger calls fn with the fields of each complete line and returns how
// many lines there were. A torn last line is not a line.
func (s *Store) readLedger(key string, fn func([]string)) (int, error) {
	b, err := s.ReadFile(key)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("storage: %w", err)
	}
	n := 0
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		fn(strings.Split(string(b[:i]), "\t"))
		b = b[i+1:]
		n++
	}
	return n, nil
}

// rewriteLedger replaces a shard with compact, plus whatever lines follow
// the first skip lines of the file now (appended since it was read). The
// caller holds the lock of the shard's writer.
func (s *Store) rewriteLedger(key string, skip int, compact []byte) error {
	f, err := s.open(key)
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for range skip {
		if _, err := r.ReadSlice('\n'); err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return fmt.Errorf("storage: rewrite %s: %w", key, err)
		}
	}
	rest, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("storage: rewrite %s: %w", key, err)
	}
	if i := bytes.LastIndexByte(rest, '\n'); i >= 0 {
		compact = append(compact, rest[:i+1]...)
	}
	return s.writeFileAtomic(key, compact, Lazy)
}

func runLine(r Run) string {
	return r.FeedID + "\t" + r.ScheduledAt.UTC().Format(time.RFC3339Nano) + "\t" + r.FetchID + "\t" +
		r.FetchedAt.UTC().Format(time.RFC3339Nano) + "\t" + strconv.FormatInt(r.Offset, 10) + "\n"
}

func committedLine(c Committed) string {
	return c.FeedID + "\t" + c.FetchID + "\t" + c.FetchedAt.UTC().Format(time.RFC3339Nano) + "\n"
}

func clean(s string) bool { return s != "" && !strings.ContainsAny(s, "\t\n") }

// appendLedger appends lines grouped by shard. The caller holds the lock.
func (s *Store) appendLedger(byShard map[string][]byte, d Durability) error {
	for key, data := range byShard {
		if _, err := s.AppendLines(key, data, d); err != nil {
			return err
		}
	}
	return nil
}

// RecordCommitted appends to the stored ledger the fetches feed-store has
// committed (their feed states durable). The caller holds the store lock.
// The lines are not synced: one lost to a crash makes feed-store see its
// fetch again, which changes nothing.
func (s *Store) RecordCommitted(cs []Committed) error {
	byShard := map[string][]byte{}
	for _, c := range cs {
		if !clean(c.FeedID) || !clean(c.FetchID) {
			continue
		}
		key := ledgerShard(ledgerStored, c.FeedID)
		byShard[key] = append(byShard[key], committedLine(c)...)
	}
	return s.appendLedger(byShard, Lazy)
}

// recordRuns appends the runs of fetch records just appended to fetches/
// (the record of records[i] began at offsets[i]). A record of a page
// feed-scrape fetched, or of a due record without scheduled_at, is not a
// run. The caller holds the fetch lock.
func (s *Store) recordRuns(records []*ndjson.Fetch, offsets []int64) error {
	byShard := map[string][]byte{}
	for i, f := range records {
		if f.Page != nil || f.Due.ScheduledAt.IsZero() || !clean(f.Due.FeedID) || !clean(f.FetchID) {
			continue
		}
		key := ledgerShard(ledgerFetched, f.Due.FeedID)
		byShard[key] = append(byShard[key], runLine(Run{FeedID: f.Due.FeedID, ScheduledAt: f.Due.ScheduledAt.Time,
			FetchID: f.FetchID, FetchedAt: f.FetchedAt.Time, Offset: offsets[i]})...)
	}
	return s.appendLedger(byShard, Lazy)
}

// RecordedFetch reads back the fetch record of a run from fetches/: the
// line as it was written. ok is false when it is no longer there (pruned).
func (s *Store) RecordedFetch(r Run) (line []byte, ok bool, err error) {
	f, err := s.open(DayFile(DirFetches, r.FetchedAt))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("storage: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(r.Offset, io.SeekStart); err != nil {
		return nil, false, fmt.Errorf("storage: %w", err)
	}
	rd := ndjson.NewReader(f)
	l, err := rd.Next()
	if err != nil || l.Unterminated || l.Type != ndjson.TypeFetch {
		return nil, false, nil
	}
	var rec struct {
		FetchID string `json:"fetch_id"`
	}
	if l.Decode(&rec) != nil || rec.FetchID != r.FetchID {
		return nil, false, nil
	}
	return append([]byte(nil), l.Raw...), true, nil
}

// CompactLedgers rewrites every shard of both run ledgers with the last
// line of each feed, leaving out the feeds whose last line gone says is of
// a fetch record no longer in fetches/ (feed-store prune deleted it): a
// run that old is not replayed, and a feed unsubscribed long ago leaves
// nothing behind. It returns how many feeds' lines it dropped. With dry
// set it only counts. The caller holds the store lock and the fetch lock.
func (s *Store) CompactLedgers(gone func(fetchID string, fetchedAt time.Time) bool, dry bool) (dropped int, err error) {
	for _, dir := range []string{ledgerFetched, ledgerStored} {
		shards, err := s.glob(dir + "/*.tsv")
		if err != nil {
			return dropped, err
		}
		for _, key := range shards {
			type last struct {
				line string
				at   time.Time // scheduled_at (fetched) or fetched_at (stored): the later wins
			}
			feeds := map[string]last{}
			var order []string
			lines, err := s.readLedger(key, func(f []string) {
				var at, fetchedAt time.Time
				var fetchID string
				var err error
				switch {
				case dir == ledgerFetched && len(f) == 5:
					fetchID = f[2]
					if at, err = time.Parse(time.RFC3339Nano, f[1]); err == nil {
						fetchedAt, err = time.Parse(time.RFC3339Nano, f[3])
					}
				case dir == ledgerStored && len(f) == 3:
					fetchID = f[1]
					at, err = time.Parse(time.RFC3339Nano, f[2])
					fetchedAt = at
				default:
					return
				}
				if err != nil {
					return
				}
				old, seen := feeds[f[0]]
				if seen && at.Before(old.at) {
					return
				}
				if !seen {
					order = append(order, f[0])
				}
				l := last{line: strings.Join(f, "\t") + "\n", at: at}
				if gone(fetchID, fetchedAt) {
					l.line = "" // dropped, unless a later line of the feed comes
				}
				feeds[f[0]] = l
			})
			if err != nil {
				return dropped, err
			}
			var buf bytes.Buffer
			kept := 0
			for _, feed := range order {
				if l := feeds[feed].line; l != "" {
					buf.WriteString(l)
					kept++
				}
			}
			dropped += len(order) - kept
			if dry || lines == kept {
				continue
			}
			if err := s.rewriteLedger(key, lines, buf.Bytes()); err != nil {
				return dropped, err
			}
		}
	}
	return dropped, nil
}
