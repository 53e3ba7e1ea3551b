package catalog

import (
	"context"
	"time"
)

// MediaFigures are what the media rows add up to: the figures of the
// feedpipe_media_* metrics (stats.Families).
type MediaFigures struct {
	// Files are the rows by state: MediaQueued, MediaStored, MediaRefused,
	// MediaFailed. A file two entries ask for is a row of each.
	Files map[string]int
	// Refused and Failed are those rows by their reason (too_large,
	// http_404, ...).
	Refused, Failed map[string]int
	// Due are the queued rows whose try is due at the time asked: the
	// downloads feed-media run has yet to start.
	Due int
	// StoredFiles and StoredBytes are the files in the store's media/ the
	// rows name, each once: a file is stored under its SHA-256, so
	// entries that share one share its copy.
	StoredFiles int
	StoredBytes int64
}

// MediaFigures adds up the media rows at now.
func (c *Catalog) MediaFigures(ctx context.Context, now time.Time) (MediaFigures, error) {
	f := MediaFigures{Files: map[string]int{}, Refused: map[string]int{}, Failed: map[string]int{}}
	rows, err := c.read(ctx, kept, `SELECT state, reason, count(*), coalesce(sum(state = 'queued' AND coalesce(next_try_at, 0) <= ?), 0)
		FROM media GROUP BY state, reason`, unixMS(now))
	if err != nil {
		return f, err
	}
	defer rows.Close()
	for rows.Next() {
		var state, reason string
		var n, due int
		if err := rows.Scan(&state, &reason, &n, &due); err != nil {
			return f, err
		}
		f.Files[state] += n
		f.Due += due
		switch state {
		case MediaRefused:
			f.Refused[reason] += n
		case MediaFailed:
			f.Failed[reason] += n
		}
	}
	if err := rows.Err(); err != nil {
		return f, err
	}
	err = c.readRow(ctx, kept, `SELECT count(*), coalesce(sum(bytes), 0)
		FROM (SELECT max(bytes) AS bytes FROM media WHERE state = 'stored' AND sha256 IS NOT NULL GROUP BY sha256)`).Scan(&f.StoredFiles, &f.StoredBytes)
	return f, err
}
