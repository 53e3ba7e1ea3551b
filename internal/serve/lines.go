package serve

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The lines of entries/ that the catalog points at are read through day
// files kept open (a page of 50 entries is 50 reads, not 50 opens).
// entries/ day files are only appended to, and deleted whole by prune;
// every minute the files are let go (closed a minute later, when no read
// can still be using them) and opened anew, so a file prune deleted is
// not held for long.

const filesEvery = time.Minute

type dayFiles struct {
	mu      sync.Mutex
	open    map[string]*os.File
	retired []*os.File
	since   time.Time
}

func (d *dayFiles) file(st *storedir.Store, key string) (*os.File, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if now := time.Now(); now.Sub(d.since) > filesEvery {
		for _, f := range d.retired {
			f.Close()
		}
		d.retired = d.retired[:0]
		for _, f := range d.open {
			d.retired = append(d.retired, f)
		}
		d.open, d.since = map[string]*os.File{}, now
	}
	if f := d.open[key]; f != nil {
		return f, nil
	}
	f, err := st.Open(key)
	if err != nil {
		return nil, err
	}
	d.open[key] = f
	return f, nil
}

func (d *dayFiles) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, f := range d.open {
		f.Close()
	}
	for _, f := range d.retired {
		f.Close()
	}
	d.open, d.retired = nil, nil
}

// line reads the line at loc in entries/, without its newline.
func (s *Server) line(loc catalog.Location) ([]byte, error) {
	if !ndjson.IsDay(loc.Day) || loc.Offset < 0 || loc.Length <= 0 || loc.Length > ndjson.MaxLineBytes+2 {
		return nil, fmt.Errorf("serve: no line at %+v", loc)
	}
	f, err := s.files.file(s.cfg.Store, storedir.DirEntries+"/"+loc.Day+".ndjson")
	if err != nil {
		return nil, err
	}
	b := make([]byte, loc.Length)
	if _, err := f.ReadAt(b, loc.Offset); err != nil {
		return nil, fmt.Errorf("serve: read entries/%s.ndjson at %d: %w", loc.Day, loc.Offset, err)
	}
	return bytes.TrimSpace(b), nil
}

// entryLine reads the line of an entry's latest version: a JSON object
// that is its record (the uid is checked), without its newline.
func (s *Server) entryLine(row catalog.EntryRow) ([]byte, error) {
	line, err := s.line(row.Location)
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[0] != '{' || line[len(line)-1] != '}' || !bytes.Contains(line, []byte(`"entry_uid":"`+row.UID+`"`)) {
		return nil, errNotItsLine
	}
	return line, nil
}

var errNotItsLine = keyError("serve: the line an entry's index points at is not its record: rebuild the catalog with feed-store reindex")

// entry reads an entry's latest version.
func (s *Server) entry(row catalog.EntryRow) (ndjson.Entry, error) {
	var e ndjson.Entry
	line, err := s.entryLine(row)
	if err != nil {
		return e, err
	}
	if err := ndjson.Unmarshal(line, &e); err != nil || e.EntryUID != row.UID {
		return e, errNotItsLine
	}
	return e, nil
}
