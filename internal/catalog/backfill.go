package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Backfill (docs/design.md#backfill): a feed's walk through its archive,
// RFC 5005 §4 (archived feeds, by prev-archive) or §3 (paged feeds, by
// next). feed-store records the current document's first link to its
// history (the head) as it stores the feed's polls, and advances the walk
// as it stores each archive page; feed-due lists the next page; feed-fetch
// claims each page by its URL before it fetches it (archive_pages), so
// that a page is fetched once, whoever asks, and read once.

// The kinds of walk (Walk.Kind, HeadKind): the link followed.
const (
	WalkArchive = "prev-archive" // RFC 5005 §4
	WalkPaged   = "next"         // RFC 5005 §3
)

// The states of a walk (Walk.State).
const (
	WalkNone    = ""        // never walked
	WalkAsked   = "asked"   // feed-sub backfill asked for one
	WalkWalking = "walking" // NextURL is the page to read next
	WalkDone    = "done"    // it reached the end, or pages read before
	WalkStopped = "stopped" // a loop or a broken link ended it: Reason
)

// maxWalkNotes is the longest reason kept.
const maxWalkNotes = 200

// MaxArchivePagesPerDay is how many archive pages of one feed are fetched
// in a UTC day at most (docs/design.md#backfill).
const MaxArchivePagesPerDay = 20

// Walk is a feed's backfill, as feed-sub ls --json and the API show it
// (pkg/ndjson's doc, "backfill").
type Walk struct {
	FeedID string `json:"-"`
	// Wanted is the subscription's backfill setting (false for a feed no
	// longer subscribed).
	Wanted bool   `json:"-"`
	State  string `json:"state"`
	Kind   string `json:"kind"`
	// Head is the current document's link to its history (prev-archive,
	// else next), and HeadKind which; HeadRead says its page was read.
	Head     string `json:"head"`
	HeadKind string `json:"head_kind"`
	HeadRead bool   `json:"head_read"`
	NextURL  string `json:"next_url"`
	// Pages and Entries: what the walk read and stored.
	Pages   int `json:"pages"`
	Entries int `json:"entries"`
	// PagesToday are the pages of the feed claimed since the UTC day
	// began (at most MaxArchivePagesPerDay).
	PagesToday int         `json:"pages_today"`
	StartedAt  ndjson.Time `json:"started_at"`
	EndedAt    ndjson.Time `json:"ended_at"`
	Reason     string      `json:"reason"`
}

// Next is the page the walk would read next, "" for none: the page a
// walk under way reached, else (a walk asked for, or wanted by the
// subscription's backfill setting, whichever ended last) the head, when
// it was not read yet; a walk asked for after it stopped resumes where it
// stopped.
func (w *Walk) Next(wanted bool) string {
	switch {
	case w.State == WalkWalking:
		return w.NextURL
	case w.State == WalkAsked && w.NextURL != "":
		return w.NextURL
	case w.State == WalkAsked || wanted && (w.State == WalkNone || w.State == WalkDone):
		if !w.HeadRead {
			return w.Head
		}
	}
	return ""
}

// Walks are the walks of every feed that has one, or a head, by feed id,
// with the pages claimed since day (the UTC day's start).
func (c *Catalog) Walks(ctx context.Context, day time.Time) (map[string]*Walk, error) {
	rows, err := c.read(ctx, kept, `SELECT f.feed_id, b.state, b.kind, b.head, b.head_kind,
		EXISTS (SELECT 1 FROM archive_pages p WHERE p.feed_key = b.feed_key AND p.url = b.head AND p.stored),
		b.next_url, b.pages, b.entries, b.walk, b.ended_at, b.reason,
		(SELECT count(*) FROM archive_pages p WHERE p.feed_key = b.feed_key AND p.claimed_at >= :day),
		coalesce(s.backfill, 0)
		FROM backfill b JOIN feeds f ON f.key = b.feed_key LEFT JOIN subscriptions s ON s.feed_key = b.feed_key`, sql.Named("day", unixMS(day)))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]*Walk{}
	for rows.Next() {
		w := &Walk{}
		var started, ended sql.NullInt64
		if err := rows.Scan(&w.FeedID, &w.State, &w.Kind, &w.Head, &w.HeadKind, &w.HeadRead, &w.NextURL, &w.Pages, &w.Entries,
			&started, &ended, &w.Reason, &w.PagesToday, &w.Wanted); err != nil {
			return nil, err
		}
		w.StartedAt, w.EndedAt = ndjson.At(fromMS(started)), ndjson.At(fromMS(ended))
		out[w.FeedID] = w
	}
	return out, rows.Err()
}

// SetArchiveHead records the current document's first link to its
// history for feedID (head, of kind WalkArchive or WalkPaged), when it
// changed: feed-store, storing a poll of the feed.
func (t *Tx) SetArchiveHead(feedID, head, kind string) error {
	defer t.within(feedID)()
	key, err := t.feedKey(feedID)
	if err != nil {
		return err
	}
	_, err = t.write(kept, `INSERT INTO backfill (feed_key, head, head_kind) VALUES (?, ?, ?)
		ON CONFLICT (feed_key) DO UPDATE SET head = excluded.head, head_kind = excluded.head_kind
		WHERE head != excluded.head OR head_kind != excluded.head_kind`, key, head, kind)
	return err
}

// ArchiveHeads are the heads recorded, by feed id, as "KIND URL" ("" for
// none): what feed-store compares a poll's links with before it writes.
func (c *Catalog) ArchiveHeads(ctx context.Context) (map[string]string, error) {
	rows, err := c.read(ctx, once, `SELECT f.feed_id, CASE WHEN b.head = '' THEN '' ELSE b.head_kind || ' ' || b.head END
		FROM backfill b JOIN feeds f ON f.key = b.feed_key`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, head string
		if err := rows.Scan(&id, &head); err != nil {
			return nil, err
		}
		out[id] = head
	}
	return out, rows.Err()
}

// AskWalk starts a walk of feedID by hand (feed-sub backfill): from where
// a stopped walk stopped (its page fetched again, once, when it failed),
// else from the head. A walk under way is left as it is (ok false).
func (c *Catalog) AskWalk(ctx context.Context, feedID string) (ok bool, err error) {
	err = c.Update(ctx, func(t *Tx) error {
		defer t.within(feedID)()
		key, err := t.feedKey(feedID)
		if err != nil {
			return err
		}
		var state, next string
		err = t.readRow(kept, `SELECT state, next_url FROM backfill WHERE feed_key = ?`, key).Scan(&state, &next)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = t.write(kept, `INSERT INTO backfill (feed_key, state) VALUES (?, ?)`, key, WalkAsked)
			ok = true
			return err
		case err != nil:
			return err
		case state == WalkWalking:
			return nil
		}
		ok = true
		if state == WalkStopped && next != "" {
			// The page that failed (a broken link) is asked again.
			if _, err := t.write(kept, `DELETE FROM archive_pages WHERE feed_key = ? AND url = ? AND stored`, key, next); err != nil {
				return err
			}
		} else {
			next = ""
		}
		_, err = t.write(kept, `UPDATE backfill SET state = ?, next_url = ?, reason = '' WHERE feed_key = ?`, WalkAsked, next, key)
		return err
	})
	return ok, err
}

// ArchiveClaim is an archive page to claim: a feed's page, by its URL.
type ArchiveClaim struct {
	FeedID, URL string
}

// ClaimArchivePages claims archive pages at now before feed-fetch fetches
// them, in one transaction, as ClaimRuns claims runs: ClaimFetch (this
// process fetches it), ClaimStored (it was read: never again),
// ClaimFetched (fetched, not read yet: its record is passed on) or
// ClaimBusy (another pipeline fetches it now).
func (c *Catalog) ClaimArchivePages(ctx context.Context, pages []ArchiveClaim, now time.Time) ([]ClaimResult, error) {
	out := make([]ClaimResult, len(pages))
	err := c.Update(ctx, func(t *Tx) error {
		defer t.within()() // claims: no reader keeps an answer of them
		for i, p := range pages {
			key, err := t.feedKey(p.FeedID)
			if err != nil {
				return err
			}
			var claimed int64
			var fetchID sql.NullString
			var stored bool
			err = t.readRow(kept, `SELECT claimed_at, fetch_id, stored FROM archive_pages WHERE feed_key = ? AND url = ?`, key, p.URL).
				Scan(&claimed, &fetchID, &stored)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				_, err = t.write(kept, `INSERT INTO archive_pages (feed_key, url, claimed_at) VALUES (?, ?, ?)`, key, p.URL, unixMS(now))
				out[i] = ClaimResult{Claim: ClaimFetch}
				if err != nil {
					return err
				}
				continue
			case err != nil:
				return err
			case stored:
				out[i] = ClaimResult{Claim: ClaimStored}
				continue
			case fetchID.Valid:
				var ref FetchRef
				err := scanFetch(t.readRow(kept, `SELECT `+fetchColumns+` FROM fetches x JOIN feeds f ON f.key = x.feed_key WHERE x.fetch_id = ?`,
					fetchID.String).Scan, &ref)
				if err == nil {
					out[i] = ClaimResult{Claim: ClaimFetched, Fetch: ref}
					continue
				}
				if !errors.Is(err, sql.ErrNoRows) {
					return err
				}
			case now.Sub(time.UnixMilli(claimed)) < ClaimStale:
				out[i] = ClaimResult{Claim: ClaimBusy}
				continue
			}
			// A dead pipeline's claim, or a record gone: fetch it again.
			if _, err := t.write(kept, `UPDATE archive_pages SET claimed_at = ?, fetch_id = NULL WHERE feed_key = ? AND url = ?`,
				unixMS(now), key, p.URL); err != nil {
				return err
			}
			out[i] = ClaimResult{Claim: ClaimFetch}
		}
		return nil
	})
	return out, err
}

// ArchiveFetched notes the fetch of each claimed page (its record is in
// fetches/ now): a pipeline that stops before feed-store reads it passes
// the record on, not a new fetch.
func (c *Catalog) ArchiveFetched(ctx context.Context, fetches map[ArchiveClaim]string) error {
	if len(fetches) == 0 {
		return nil
	}
	return c.Update(ctx, func(t *Tx) error {
		defer t.within()()
		for p, id := range fetches {
			key, err := t.feedKey(p.FeedID)
			if err != nil {
				return err
			}
			if _, err := t.write(kept, `UPDATE archive_pages SET fetch_id = ? WHERE feed_key = ? AND url = ? AND NOT stored`, id, key, p.URL); err != nil {
				return err
			}
		}
		return nil
	})
}

// ArchivePage is what feed-store read of an archive page.
type ArchivePage struct {
	FeedID  string
	URL     string // the page asked for (the fetch's requested_url)
	FetchID string
	At      time.Time // its fetched_at
	// Failed says why it could not be read (an error code and the URL);
	// "" when it was.
	Failed string
	// PrevArchive and Next are its links onward (parse.prev_archive,
	// parse.next).
	PrevArchive, Next string
	Entries           int // entries it stored
}

// ErrPageRead marks an archive page read before: a replay, nothing to do.
var ErrPageRead = errors.New("archive page read before")

// ReadArchivePage advances feedID's walk by the page p, read at p.At:
// it marks the page read and sets the walk's next page, or ends it, with
// its reason: the oldest page reached (end), a page read by an earlier
// walk reached (caught_up: RFC 5005 §4 has a client stop there), a loop
// (a page this walk read already), or a broken link (p.Failed). A page
// that is not the one the walk waits for (a replay, a walk since moved
// on) changes nothing but its own mark; one read before, not even that
// (ErrPageRead).
func (t *Tx) ReadArchivePage(p ArchivePage) (Walk, error) {
	defer t.within(p.FeedID)()
	w := Walk{FeedID: p.FeedID}
	key, err := t.feedKey(p.FeedID)
	if err != nil {
		return w, err
	}
	var walk, ended sql.NullInt64
	err = t.readRow(kept, `SELECT state, kind, head, head_kind, next_url, walk, pages, entries, ended_at, reason FROM backfill WHERE feed_key = ?`, key).
		Scan(&w.State, &w.Kind, &w.Head, &w.HeadKind, &w.NextURL, &walk, &w.Pages, &w.Entries, &ended, &w.Reason)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return w, err
	}
	var stored bool
	switch err := t.readRow(kept, `SELECT stored FROM archive_pages WHERE feed_key = ? AND url = ?`, key, p.URL).Scan(&stored); {
	case err == nil && stored:
		return w, ErrPageRead
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return w, err
	}
	at := unixMS(p.At)
	switch {
	case w.State == WalkWalking && p.URL == w.NextURL:
	case w.State == WalkAsked && w.NextURL != "" && p.URL == w.NextURL: // a stopped walk, resumed
		w.State = WalkWalking
	case w.State != WalkWalking && p.URL == w.Head:
		w.State, w.Kind, w.Pages, w.Entries, w.Reason = WalkWalking, w.HeadKind, 0, 0, ""
		walk, ended = sql.NullInt64{Int64: at, Valid: true}, sql.NullInt64{}
	default:
		// Not the page the walk waits for: marked read, no more.
		_, err := t.write(kept, `INSERT INTO archive_pages (feed_key, url, claimed_at, fetch_id, stored) VALUES (?, ?, ?, ?, 1)
			ON CONFLICT (feed_key, url) DO UPDATE SET fetch_id = excluded.fetch_id, stored = 1`, key, p.URL, at, p.FetchID)
		return w, err
	}
	if _, err := t.write(kept, `INSERT INTO archive_pages (feed_key, url, walk, claimed_at, fetch_id, stored) VALUES (?, ?, ?, ?, ?, 1)
		ON CONFLICT (feed_key, url) DO UPDATE SET walk = excluded.walk, fetch_id = excluded.fetch_id, stored = 1`,
		key, p.URL, walk.Int64, at, p.FetchID); err != nil {
		return w, err
	}
	if p.Failed == "" {
		w.Pages++
		w.Entries += p.Entries
	}
	next := p.PrevArchive
	if w.Kind == WalkPaged {
		next = p.Next
	}
	// Was the page onward read, and by which walk (NULL: outside one)?
	var onwardWalk sql.NullInt64
	onwardRead := false
	if next != "" && p.Failed == "" {
		switch err := t.readRow(kept, `SELECT walk FROM archive_pages WHERE feed_key = ? AND url = ? AND stored`, key, next).Scan(&onwardWalk); {
		case err == nil:
			onwardRead = true
		case !errors.Is(err, sql.ErrNoRows):
			return w, err
		}
	}
	end := func(state, reason string) {
		w.State, w.Reason = state, clipReason(reason)
		ended = sql.NullInt64{Int64: at, Valid: true}
	}
	switch {
	case p.Failed != "":
		end(WalkStopped, "broken link: "+p.Failed)
		w.NextURL = p.URL // feed-sub backfill asks for it again
	case next == "":
		end(WalkDone, "end: the oldest page reached")
		w.NextURL = ""
	case next == p.URL || onwardRead && onwardWalk.Valid && onwardWalk.Int64 == walk.Int64:
		end(WalkStopped, fmt.Sprintf("loop: %s links back to %s", p.URL, next))
		w.NextURL = ""
	case onwardRead:
		end(WalkDone, "caught up: "+next+" was read before")
		w.NextURL = ""
	default:
		w.State, w.NextURL = WalkWalking, next
	}
	_, err = t.write(kept, `INSERT INTO backfill (feed_key, head, head_kind, state, kind, next_url, walk, pages, entries, ended_at, reason)
		VALUES (:key, :head, :head_kind, :state, :kind, :next, :walk, :pages, :entries, :ended, :reason)
		ON CONFLICT (feed_key) DO UPDATE SET state = :state, kind = :kind, next_url = :next, walk = :walk, pages = :pages,
		entries = :entries, ended_at = :ended, reason = :reason`,
		sql.Named("key", key), sql.Named("head", w.Head), sql.Named("head_kind", w.HeadKind), sql.Named("state", w.State),
		sql.Named("kind", w.Kind), sql.Named("next", w.NextURL), sql.Named("walk", walk), sql.Named("pages", w.Pages),
		sql.Named("entries", w.Entries), sql.Named("ended", ended), sql.Named("reason", w.Reason))
	w.StartedAt, w.EndedAt = ndjson.At(fromMS(walk)), ndjson.At(fromMS(ended))
	return w, err
}

// clipReason keeps a reason short: it names URLs.
func clipReason(s string) string {
	if len(s) > maxWalkNotes {
		return s[:maxWalkNotes] + "…"
	}
	return s
}
