package catalog

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The records the catalog's rows point at: an entry's line in entries/, a
// fetch record's in fetches/, and its payload in raw/.

// Line reads the line at loc in the day files of dir (storedir.DirEntries,
// storedir.DirFetches), without its newline.
func (c *Catalog) Line(dir string, loc Location) ([]byte, error) {
	if err := loc.check(dir); err != nil {
		return nil, err
	}
	b, err := c.st.ReadAt(dir+"/"+loc.Day+".ndjson", loc.Offset, loc.Length)
	if err != nil {
		return nil, err
	}
	return bytes.TrimSpace(b), nil
}

// check reports a location that cannot be a line's of a day file of dir.
func (loc Location) check(dir string) error {
	if !ndjson.IsDay(loc.Day) || loc.Offset < 0 || loc.Length <= 0 || loc.Length > ndjson.MaxLineBytes+2 {
		return fmt.Errorf("catalog: %s: no line at %+v", dir, loc)
	}
	return nil
}

// dayFile reads lines as Catalog.Line does, for a reader going through a
// log in order: the day file stays open while its lines are read.
type dayFile struct {
	key string
	f   *os.File
	buf []byte
}

// line returns the line at loc of dir's day files.
func (d *dayFile) line(st *storedir.Store, dir string, loc Location) ([]byte, error) {
	if err := loc.check(dir); err != nil {
		return nil, err
	}
	if key := dir + "/" + loc.Day + ".ndjson"; key != d.key {
		d.close()
		f, err := st.Open(key)
		if err != nil {
			return nil, err
		}
		d.key, d.f = key, f
	}
	d.buf = slices.Grow(d.buf[:0], int(loc.Length))[:loc.Length]
	if _, err := d.f.ReadAt(d.buf, loc.Offset); err != nil {
		return nil, fmt.Errorf("store: read %s: %w", d.key, err)
	}
	return bytes.TrimSpace(d.buf), nil
}

func (d *dayFile) close() {
	if d.f != nil {
		d.f.Close()
		d.key, d.f = "", nil
	}
}

// Entry reads a stored entry's latest version.
func (c *Catalog) Entry(r EntryRow) (ndjson.Entry, error) {
	var e ndjson.Entry
	b, err := c.Line(storedir.DirEntries, r.Location)
	if err != nil {
		return e, err
	}
	if err := ndjson.Unmarshal(b, &e); err != nil || e.EntryUID != r.UID {
		return e, fmt.Errorf("catalog: the line of entry %s in entries/%s.ndjson is not its record: rebuild the catalog with feed-store reindex", r.UID, r.Day)
	}
	return e, nil
}

// FetchRecord reads the fetch record of a fetch id; ok is false for a fetch
// the catalog does not know.
func (c *Catalog) FetchRecord(ctx context.Context, fetchID string) (f ndjson.Fetch, ok bool, err error) {
	ref, ok, err := c.Fetch(ctx, fetchID)
	if err != nil || !ok {
		return f, false, err
	}
	b, err := c.Line(storedir.DirFetches, ref.Location)
	if err != nil {
		return f, false, err
	}
	if err := ndjson.Unmarshal(b, &f); err != nil || f.FetchID != fetchID {
		return f, false, fmt.Errorf("catalog: the line of fetch %s in fetches/%s.ndjson is not its record: rebuild the catalog with feed-store reindex", fetchID, ref.Day)
	}
	if f.Parse == nil {
		var parse sql.NullString
		if err := c.readRow(ctx, kept, `SELECT parse FROM fetches WHERE fetch_id = ?`, fetchID).Scan(&parse); err != nil {
			return f, false, err
		}
		if parse.Valid {
			if err := ndjson.Unmarshal([]byte(parse.String), &f.Parse); err != nil {
				return f, false, fmt.Errorf("catalog: the parse of fetch %s: %w", fetchID, err)
			}
		}
	}
	return f, true, nil
}

// Raw returns the payload of a fetch exactly as it was served, and its
// Content-Type; ok is false for a fetch the catalog does not know, or one
// that stored no payload.
func (c *Catalog) Raw(ctx context.Context, fetchID string, max int64) (body []byte, contentType string, ok bool, err error) {
	f, ok, err := c.FetchRecord(ctx, fetchID)
	if err != nil || !ok || f.BodyRef == nil {
		return nil, "", false, err
	}
	body, err = c.st.GetRaw(f.BodyRef.Key, max)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", false, nil // pruned
	}
	if err != nil {
		return nil, "", false, err
	}
	return body, f.ContentType, true, nil
}
