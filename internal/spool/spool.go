// Package spool keeps the fetch records of the bodies pushed to
// feed-serve (a WebSub hub's content distribution, a webhook POST) until
// feed-fetch hands them on down the pipeline: STORE/spool/FETCH_ID.ndjson,
// one file a record, each written atomically (a temporary file, synced,
// renamed), so that feed-serve never writes the taps the pipeline's one
// writer appends to (docs/design.md#push).
package spool

import (
	"bytes"
	"fmt"
	"path"
	"strings"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Dir is the spool's directory in the store.
const Dir = "spool"

// ext ends the name of every record's file; a file that cannot be read is
// renamed to end in bad.
const (
	ext = ".ndjson"
	bad = ".bad"
)

// Put writes the fetch record f to the spool, atomically: the next
// feed-fetch sees the whole record or none of it.
func Put(st *storedir.Store, f *ndjson.Fetch) error {
	if !ndjson.IsFetchID(f.FetchID) {
		return fmt.Errorf("spool: %q is not a fetch id", f.FetchID)
	}
	line, err := ndjson.Marshal(f)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	return st.WriteFileAtomic(path.Join(Dir, f.FetchID+ext), line)
}

// Item is one spooled record: its file, the record and its line (without
// the newline).
type Item struct {
	Key   string
	Fetch ndjson.Fetch
	Line  []byte
}

// Read returns the records in the spool, oldest first (fetch ids are
// UUIDv7: by time). A file that does not hold one fetch record, checked
// as any (ndjson.Fetch.Check), is renamed aside (NAME.bad) and named in
// bad, with why.
func Read(st *storedir.Store) (items []Item, badFiles []string, err error) {
	names, err := st.List(Dir)
	if err != nil {
		return nil, nil, err
	}
	for _, name := range names {
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ext) {
			continue // a temporary file of a Put under way, or one set aside
		}
		key := path.Join(Dir, name)
		b, err := st.ReadFile(key)
		if err != nil {
			return nil, nil, err
		}
		line := bytes.TrimSuffix(b, []byte{'\n'})
		var f ndjson.Fetch
		why := ""
		switch err := ndjson.Unmarshal(line, &f); {
		case err != nil:
			why = err.Error()
		case f.Type != ndjson.TypeFetch || bytes.IndexByte(line, '\n') >= 0:
			why = "not one fetch record"
		case f.Check() != nil:
			why = f.Check().Error()
		case f.FetchID+ext != name:
			why = "its fetch_id is not its name"
		}
		if why != "" {
			if err := st.Rename(key, key+bad); err != nil {
				return nil, nil, err
			}
			badFiles = append(badFiles, name+": "+why)
			continue
		}
		items = append(items, Item{Key: key, Fetch: f, Line: line})
	}
	return items, badFiles, nil
}

// Remove removes the files of items, handed on.
func Remove(st *storedir.Store, items []Item) error {
	for _, it := range items {
		if err := st.Remove(it.Key); err != nil {
			return err
		}
	}
	return nil
}
