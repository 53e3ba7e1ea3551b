package catalog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The media of entries (feed-media, docs/store.md#media): a row per file an
// entry asks for, queued by the feed-media stage, then tried by feed-media
// run until it is stored, refused or given up. The media records of
// media/ are the record of truth of what each try gave; a row follows its
// file's last record (CatchUpMedia), and keeps besides what only a queue
// needs: when to try next, and what a resume needs.

// TapMedia is the checkpoint of the media records (media/) in the catalog.
const TapMedia = "tap:media"

// MetaMediaBudget is the meta key of the bytes feed-media downloaded on a
// day, against its daily budget.
const MetaMediaBudget = "media:budget"

// The states of a media row.
const (
	MediaQueued  = "queued"             // to try, at next_try_at or now
	MediaStored  = ndjson.MediaStored   // the file is in the store
	MediaRefused = ndjson.MediaRefused  // never tried again
	MediaFailed  = ndjson.MediaFailed   // never tried again
	mediaRetry   = ndjson.MediaRetrying // a record's status that leaves the row queued
)

// MediaWant is one file an entry asks for.
type MediaWant struct {
	FeedID, EntryUID string
	URL, Kind        string
}

// QueueMedia queues the files wants names, each file of an entry once: one
// queued, stored, refused or failed already is left as it is. It returns
// how many it queued.
func (c *Catalog) QueueMedia(ctx context.Context, wants []MediaWant, at time.Time) (int, error) {
	if len(wants) == 0 {
		return 0, nil
	}
	added := 0
	err := c.Update(ctx, func(t *Tx) error {
		added = 0
		for _, w := range wants {
			key, err := t.feedKey(w.FeedID)
			if err != nil {
				return err
			}
			end := t.within(w.FeedID) // the entry's answer lists its media
			r, err := t.write(kept, `INSERT OR IGNORE INTO media (feed_key, entry_uid, url, kind, state, queued_at) VALUES (?, ?, ?, ?, ?, ?)`,
				key, w.EntryUID, w.URL, w.Kind, MediaQueued, unixMS(at))
			end()
			if err != nil {
				return err
			}
			if n, _ := r.RowsAffected(); n > 0 {
				added++
			}
		}
		return nil
	})
	return added, err
}

// MediaJob is a queued file, with what its next try needs.
type MediaJob struct {
	ID               int64
	FeedID, EntryUID string
	URL, Kind        string
	QueuedAt         time.Time
	Attempts         int    // tries made
	PartialBytes     int64  // bytes of its partial file (media/partial/ID) known synced
	PartialValidator string // what they were served with: an ETag or a Last-Modified date, for If-Range
}

// dueMediaSQL reads the queue through its partial index, which holds the
// queued files only: left to itself SQLite walked the table in id order,
// every stored file's row before the first queued one, so that each run
// of feed-media cost what the table holds rather than what is queued.
const dueMediaSQL = `SELECT m.id, f.feed_id, m.entry_uid, m.url, m.kind, m.queued_at, m.attempts, m.partial_bytes, m.partial_validator
	FROM media m INDEXED BY media_queue JOIN feeds f ON f.key = m.feed_key
	WHERE m.state = 'queued' AND (m.next_try_at IS NULL OR m.next_try_at <= ?) AND m.id NOT IN (SELECT value FROM json_each(?))
	ORDER BY m.id LIMIT ?`

// DueMedia returns up to n queued files whose time has come at now, the
// longest queued first, but for those whose ids skip holds (being tried).
func (c *Catalog) DueMedia(ctx context.Context, now time.Time, n int, skip []int64) ([]MediaJob, error) {
	list, err := json.Marshal(ndjson.NonNil(skip))
	if err != nil {
		return nil, err
	}
	rows, err := c.read(ctx, kept, dueMediaSQL, unixMS(now), string(list), n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []MediaJob
	for rows.Next() {
		var j MediaJob
		var queued int64
		if err := rows.Scan(&j.ID, &j.FeedID, &j.EntryUID, &j.URL, &j.Kind, &queued, &j.Attempts, &j.PartialBytes, &j.PartialValidator); err != nil {
			return nil, err
		}
		j.QueuedAt = time.UnixMilli(queued).UTC()
		out = append(out, j)
	}
	return out, rows.Err()
}

// NextMediaTry is when the first queued file not due at now is, and
// whether there is one.
func (c *Catalog) NextMediaTry(ctx context.Context, now time.Time) (time.Time, bool, error) {
	var at sql.NullInt64
	err := c.readRow(ctx, once, `SELECT min(next_try_at) FROM media WHERE state = 'queued' AND next_try_at > ?`, unixMS(now)).Scan(&at)
	if err != nil || !at.Valid {
		return time.Time{}, false, err
	}
	return time.UnixMilli(at.Int64).UTC(), true, nil
}

// MediaProgress notes that bytes of the partial file of the download id
// are synced, served with validator: where a resume starts.
func (c *Catalog) MediaProgress(ctx context.Context, id, bytes int64, validator string) error {
	return c.Update(ctx, func(t *Tx) error {
		defer t.within()() // no answer shows a download's progress
		_, err := t.write(kept, `UPDATE media SET partial_bytes = ?, partial_validator = ? WHERE id = ?`, bytes, validator, id)
		return err
	})
}

// DropMedia forgets the queued file id: its feed no longer asks for it.
func (c *Catalog) DropMedia(ctx context.Context, feedID string, id int64) error {
	return c.Update(ctx, func(t *Tx) error {
		defer t.within(feedID)()
		_, err := t.write(once, `DELETE FROM media WHERE id = ? AND state = 'queued'`, id)
		return err
	})
}

// MediaTry is the end of one try at a queued file: its media record,
// appended to media/ and synced, at loc; and, for a try to be made again
// (status retrying), when, and the validator of the bytes held.
type MediaTry struct {
	Record    *ndjson.Media
	Key       string // the media/ file of the record
	Loc       Location
	End       int64 // the offset past its line
	NextTryAt time.Time
	Validator string
}

// FinishMedia records the end of a try: the row of its file follows the
// record, as the catch-up would make it follow, with the next try's time
// and the validator besides, and the checkpoint of media/ moves past the
// record. The caller appended the record and holds storedir.MediaLock.
func (c *Catalog) FinishMedia(ctx context.Context, try MediaTry) error {
	return c.Update(ctx, func(t *Tx) error {
		if err := t.applyMedia(try.Record); err != nil {
			return err
		}
		if try.Record.Status == mediaRetry {
			if _, err := t.write(kept, `UPDATE media SET next_try_at = ?, partial_validator = ? WHERE feed_key = (SELECT key FROM feeds WHERE feed_id = ?) AND entry_uid = ? AND url = ?`,
				ms(try.NextTryAt), try.Validator, try.Record.FeedID, try.Record.EntryUID, try.Record.URL); err != nil {
				return err
			}
		}
		return t.setCheckpoint(TapMedia, Checkpoint{File: try.Key, Offset: try.End})
	})
}

// applyMedia makes the row of a record's file say what the record does:
// stored (with its SHA-256, size and type), refused, failed, or queued
// again with the bytes held (retrying). A record of a file no row has
// (a catalog built anew) makes its row.
func (t *Tx) applyMedia(m *ndjson.Media) error {
	key, err := t.feedKey(m.FeedID)
	if err != nil {
		return err
	}
	defer t.within(m.FeedID)()
	state, partial, sum := m.Status, int64(0), any(nil)
	switch m.Status {
	case ndjson.MediaStored:
		sum = m.SHA256
	case mediaRetry:
		state, partial = MediaQueued, m.Bytes
	case ndjson.MediaRefused, ndjson.MediaFailed:
	default:
		return nil // a status this feedpipe does not know: the row stays
	}
	_, err = t.write(kept, `INSERT INTO media (feed_key, entry_uid, url, kind, state, queued_at, attempts, partial_bytes, sha256, bytes, content_type, reason, message, finished_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (feed_key, entry_uid, url) DO UPDATE SET state = excluded.state, attempts = excluded.attempts,
			partial_bytes = excluded.partial_bytes, sha256 = excluded.sha256, bytes = excluded.bytes, content_type = excluded.content_type,
			reason = excluded.reason, message = excluded.message, finished_at = excluded.finished_at,
			next_try_at = NULL, partial_validator = CASE WHEN excluded.partial_bytes = 0 THEN '' ELSE partial_validator END`,
		key, m.EntryUID, m.URL, m.Kind, state, unixMS(m.StartedAt.Time), m.Attempt, partial, sum, m.Bytes, m.ContentType, m.Reason, m.Message, ms(m.At.Time))
	return err
}

// CatchUpMedia makes the rows follow the media records past the
// checkpoint: those a crash left between a record and its row, or, in a
// catalog built anew, every one. The caller holds storedir.MediaLock (or
// the store's, as reindex).
func (c *Catalog) CatchUpMedia(ctx context.Context) error {
	return c.follow(ctx, TapMedia, storedir.DirMedia, func(t *Tx, _ string, _ Location, l ndjson.Line) error {
		var m ndjson.Media
		if l.Type != ndjson.TypeMedia || l.Decode(&m) != nil {
			return nil
		}
		return t.applyMedia(&m)
	})
}

// MediaBudget reads the bytes downloaded on day against the daily budget
// (0 when another day's are kept).
func (c *Catalog) MediaBudget(ctx context.Context, day string) (int64, error) {
	var b struct {
		Day   string `json:"day"`
		Bytes int64  `json:"bytes"`
	}
	if _, err := c.Meta(ctx, MetaMediaBudget, &b); err != nil || b.Day != day {
		return 0, err
	}
	return b.Bytes, nil
}

// SetMediaBudget keeps the bytes downloaded on day.
func (c *Catalog) SetMediaBudget(ctx context.Context, day string, bytes int64) error {
	return c.Update(ctx, func(t *Tx) error {
		return t.SetMeta(MetaMediaBudget, map[string]any{"day": day, "bytes": bytes})
	})
}

// MediaFile is a stored file of an entry, or one it asks for, as the API
// lists them.
type MediaFile struct {
	URL, Kind, State   string
	SHA256             string // "" unless stored
	Bytes              int64
	ContentType        string
	Reason, Message    string
	Attempts           int
	QueuedAt, Finished time.Time
}

// EntryMedia returns the files of the entry uid of feedID, in the order
// they were queued.
func (c *Catalog) EntryMedia(ctx context.Context, feedID, uid string) ([]MediaFile, error) {
	m, err := c.entriesMedia(ctx, `SELECT f.feed_id, m.entry_uid, m.url, m.kind, m.state, coalesce(m.sha256, ''), m.bytes, m.content_type, m.reason, m.message,
		m.attempts, m.queued_at, m.finished_at
		FROM media m JOIN feeds f ON f.key = m.feed_key WHERE f.feed_id = ? AND m.entry_uid = ? ORDER BY m.id`, feedID, uid)
	return m[[2]string{feedID, uid}], err
}

// StoredMedia returns the stored files of the entries named, by feed id
// and uid: those a meta-feed's page points its enclosures at.
func (c *Catalog) StoredMedia(ctx context.Context, entries []ndjson.EntryRef) (map[[2]string][]MediaFile, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	list, err := json.Marshal(entries)
	if err != nil {
		return nil, err
	}
	return c.entriesMedia(ctx, `SELECT f.feed_id, m.entry_uid, m.url, m.kind, m.state, m.sha256, m.bytes, m.content_type, m.reason, m.message,
		m.attempts, m.queued_at, m.finished_at
		FROM json_each(?) e JOIN feeds f ON f.feed_id = e.value ->> 'feed_id'
		JOIN media m ON m.feed_key = f.key AND m.entry_uid = e.value ->> 'entry_uid'
		WHERE m.state = 'stored' ORDER BY m.id`, string(list))
}

func (c *Catalog) entriesMedia(ctx context.Context, q string, args ...any) (map[[2]string][]MediaFile, error) {
	rows, err := c.read(ctx, once, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[[2]string][]MediaFile{}
	for rows.Next() {
		var (
			feed, uid string
			m         MediaFile
			queued    int64
			finished  sql.NullInt64
		)
		if err := rows.Scan(&feed, &uid, &m.URL, &m.Kind, &m.State, &m.SHA256, &m.Bytes, &m.ContentType, &m.Reason, &m.Message,
			&m.Attempts, &queued, &finished); err != nil {
			return nil, err
		}
		m.QueuedAt, m.Finished = time.UnixMilli(queued).UTC(), fromMS(finished)
		k := [2]string{feed, uid}
		out[k] = append(out[k], m)
	}
	return out, rows.Err()
}

// mediaTypeSQL is MediaType's statement, a constant so that
// TestIndexesEarnTheirWrites reads its plan.
const mediaTypeSQL = `SELECT content_type, finished_at FROM media WHERE sha256 = ? AND state = 'stored' ORDER BY id LIMIT 1`

// MediaType returns the media type a stored file was served with; ok is
// false when no row says the file is stored.
func (c *Catalog) MediaType(ctx context.Context, sum string) (contentType string, at time.Time, ok bool, err error) {
	var finished sql.NullInt64
	err = c.readRow(ctx, kept, mediaTypeSQL, sum).Scan(&contentType, &finished)
	if errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}, false, nil
	}
	if err != nil {
		return "", time.Time{}, false, err
	}
	return contentType, fromMS(finished), true, nil
}

// EntryOf returns the index row of the entry uid of feedID; ok is false
// when none is stored.
func (c *Catalog) EntryOf(ctx context.Context, feedID, uid string) (r EntryRow, ok bool, err error) {
	found, err := c.entryRows(ctx, kept, `SELECT `+entryColumns+` FROM entries e JOIN feeds f ON f.key = e.feed_key
		WHERE e.feed_key = (SELECT key FROM feeds WHERE feed_id = ?) AND e.entry_uid = ?`, feedID, uid)
	if err != nil || len(found) == 0 {
		return r, false, err
	}
	return found[0], true, nil
}

// mediaGone selects the rows of files whose entry is no longer in the
// index (prune took it), or whose latest version is in an entries/ file
// before the day :before (one a prune is about to take; empty for none).
const mediaGone = `SELECT g.id FROM media g WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.feed_key = g.feed_key AND e.entry_uid = g.entry_uid AND e.day >= :before)`

// PruneMedia forgets the rows of files whose entry is no longer in the
// index, and returns how many; with dry it only counts, and counts too
// those of the entries whose latest version is in an entries/ file before
// the day before (which the prune would take). The caller holds the
// store's lock and storedir.MediaLock.
func (c *Catalog) PruneMedia(ctx context.Context, dry bool, before string) (int, error) {
	if !dry {
		before = ""
	}
	var n int
	if err := c.readRow(ctx, once, `SELECT count(*) FROM media WHERE id IN (`+mediaGone+`)`, sql.Named("before", before)).Scan(&n); err != nil || dry || n == 0 {
		return n, err
	}
	return n, c.Update(ctx, func(t *Tx) error {
		_, err := t.write(once, `DELETE FROM media WHERE id IN (`+mediaGone+`)`, sql.Named("before", ""))
		return err
	})
}

// MediaInUse returns the SHA-256 of every stored file a row names, and the
// ids of the rows queued (whose partial files are downloads to resume);
// with dry, but for the rows PruneMedia(dry, before) counts.
func (c *Catalog) MediaInUse(ctx context.Context, dry bool, before string) (sums map[string]bool, queued map[int64]bool, err error) {
	where, args := "", []any{}
	if dry {
		where, args = ` AND id NOT IN (`+mediaGone+`)`, []any{sql.Named("before", before)}
	}
	rows, err := c.read(ctx, once, `SELECT id, state, coalesce(sha256, '') FROM media WHERE (sha256 IS NOT NULL OR state = 'queued')`+where, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	sums, queued = map[string]bool{}, map[int64]bool{}
	for rows.Next() {
		var id int64
		var state, sum string
		if err := rows.Scan(&id, &state, &sum); err != nil {
			return nil, nil, err
		}
		if sum != "" {
			sums[sum] = true
		}
		if state == MediaQueued {
			queued[id] = true
		}
	}
	return sums, queued, rows.Err()
}

// MediaRowExists reports whether the file url of the entry uid of feedID
// has a row: its record is worth keeping.
func (c *Catalog) MediaRowExists(ctx context.Context, feedID, uid, url string) (bool, error) {
	var n int
	err := c.readRow(ctx, kept, `SELECT count(*) FROM media m JOIN feeds f ON f.key = m.feed_key WHERE f.feed_id = ? AND m.entry_uid = ? AND m.url = ?`,
		feedID, uid, url).Scan(&n)
	return n > 0, err
}

// MediaCounts counts the rows by state.
func (c *Catalog) MediaCounts(ctx context.Context) (map[string]int, error) {
	rows, err := c.read(ctx, once, `SELECT state, count(*) FROM media GROUP BY state`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return nil, err
		}
		out[s] = n
	}
	return out, rows.Err()
}
