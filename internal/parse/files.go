package parse

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// ReasonFile is the due.reason of the fetch record feed-parse writes for
// a payload file: its origin.
const ReasonFile = "file"

// FileConfig is feed-parse run over payload files instead of fetch records.
type FileConfig struct {
	Out         *ndjson.Writer
	Log         *slog.Logger
	Store       *storedir.Store // reads .zst payloads; may be nil for plain files
	Parser      *Parser         // nil means DefaultParser
	Workers     int             // files parsed at once; 0 means one per CPU
	FeedID      string
	BaseURL     string
	ContentType string           // the Content-Type the files were served with, for its charset
	Now         func() time.Time // the clock dates are checked against; nil for no check
	Files       []string
}

// RunFiles parses each file (a raw payload, plain or .zst as the store
// keeps it) and writes its entries followed by a fetch record with its
// parse section, as Run does for a fetched payload, in the order of the
// files: replayed into feed-store, a file gives the feed's title, link
// and hints as a fetch would. Its due.reason is "file", its body_ref null
// (the body is in no store); it was "fetched" when the file was last
// modified.
// A file that is not a feed gets a parse error in its record; one that
// cannot be read is reported and gets none. Either makes RunFiles return
// an error matching pipe.ErrFailed at the end, once the others are done.
func RunFiles(ctx context.Context, cfg FileConfig) error {
	c := Config{Log: cfg.Log, Parser: cfg.Parser, Workers: cfg.Workers}
	c.defaults()
	failed := 0
	o := startOrdered(c.Workers, func(j *job) error {
		if j.failed {
			failed++
		}
		if len(j.out) == 0 {
			j.release()
			return nil
		}
		err := cfg.Out.WriteRaw(j.out)
		j.release()
		return err
	})
	var now time.Time
	if cfg.Now != nil {
		now = cfg.Now()
	}
	var err error
	for _, name := range cfg.Files {
		if ctx.Err() != nil {
			break
		}
		j := &job{}
		j.run = func() { cfg.fileJob(j, c, name, now) }
		if err = o.submit(j); err != nil {
			break
		}
	}
	if werr := o.close(); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	if err := cfg.Out.Flush(); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	return pipe.Failures{Records: failed}.Err("file", "files")
}

// fileJob parses one file into j.out: its entries, then its record.
func (cfg *FileConfig) fileJob(j *job, c Config, name string, now time.Time) {
	body, modified, release, err := cfg.readPayload(c.Parser, name)
	defer release() // the entries and the record hold copies of what they take from it
	if err != nil {
		j.failed = true
		c.Log.Error("cannot parse file", "file", name, "error", err)
		return
	}
	f := cfg.fileRecord(name, body, modified)
	var entries []ndjson.Entry
	feed, err := c.Parser.Parse(body, Source{FeedID: cfg.FeedID, FetchID: f.FetchID, BaseURL: cfg.BaseURL, ContentType: cfg.ContentType, Now: now})
	if err != nil {
		j.failed = true
		c.Log.Error("cannot parse file", "file", name, "error", err)
		msg := err.Error()
		f.Parse = &ndjson.Parse{SkipHours: []int{}, SkipDays: []string{}, Hubs: []string{}, Warnings: []string{}, Error: msg}
		f.Error = &ndjson.Error{Class: ndjson.ClassParse, Code: errorCode(err), Message: msg}
	} else {
		for _, w := range feed.Info.Warnings {
			c.Log.Debug("recovered", "file", name, "warning", w)
		}
		entries = limit(feed, 0)
		f.Parse = &feed.Info
	}
	j.encode(entries, f, func(what string, err error) { c.Log.Error("cannot encode "+what, "file", name, "error", err) })
}

// fileRecord is the fetch record of a payload file, before its parse: a
// 200 of the feed's URL, fetched when the file was last modified, with a
// fetch id made of that time and a hash of the body: the same file gives
// the same record (feed-store stores it once), and an old file does not
// pass for a newer fetch in feed-store. Its body_sha256 is empty: a file
// is no response, and a SHA-256 of every file cost a twentieth of
// feed-parse's time.
func (cfg *FileConfig) fileRecord(name string, body []byte, modified time.Time) *ndjson.Fetch {
	var random [16]byte
	binary.BigEndian.PutUint64(random[:], xxhash.Sum64(body))
	binary.BigEndian.PutUint64(random[8:], uint64(len(body)))
	id, _ := ids.FetchID(modified, bytes.NewReader(random[:])) // 16 bytes: enough for the 10 it reads
	return &ndjson.Fetch{
		Header:        ndjson.Head(ndjson.TypeFetch),
		FetchID:       id,
		Due:           ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: cfg.FeedID, URL: cfg.BaseURL, Labels: []string{}, Reason: ReasonFile},
		RequestedURL:  cfg.BaseURL,
		URL:           cfg.BaseURL,
		Redirects:     []ndjson.Redirect{},
		FetchedAt:     ndjson.At(modified),
		HTTPStatus:    200,
		ContentType:   cfg.ContentType,
		ContentLength: int64(len(body)),
	}
}

// readPayload reads a payload file, plain or .zst as the store keeps it,
// and when it was last modified; release gives its buffer back once the
// body is no longer used.
func (cfg *FileConfig) readPayload(p *Parser, name string) (body []byte, modified time.Time, release func(), err error) {
	limit := positiveOr(p.MaxBodyBytes, MaxBodyBytes)
	if strings.HasSuffix(name, ".zst") && cfg.Store != nil {
		fi, err := os.Stat(name)
		if err != nil {
			return nil, time.Time{}, func() {}, err
		}
		body, err := cfg.Store.GetRawFile(name, limit)
		return body, fi.ModTime(), func() {}, err
	}
	bp := bodyBufs.Get().(*[]byte)
	body, modified, err = readFileMax(name, limit, bp)
	return body, modified, func() {
		if cap(*bp) <= maxPooledBody {
			bodyBufs.Put(bp)
		}
	}, err
}

// bodyBufs are the buffers files are read into, used again for the next
// file: a new one for each, cleared by the runtime, was a twentieth of
// feed-parse's time. A parse keeps nothing of its body (strings are
// copies), so the buffer is free once the file's output is encoded.
var bodyBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBody is the largest body buffer kept for reuse.
const maxPooledBody = 16 << 20

// readFileMax reads a file of at most limit bytes into *buf (which it
// grows as needed), and when it was last modified.
func readFileMax(name string, limit int64, buf *[]byte) ([]byte, time.Time, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer f.Close()
	var size int64
	var modified time.Time
	if fi, err := f.Stat(); err == nil {
		modified = fi.ModTime()
		if fi.Mode().IsRegular() {
			size = fi.Size()
		}
	}
	if size > limit {
		return nil, modified, fmt.Errorf("parse: %w: %s is over %d bytes", ErrTooLarge, name, limit)
	}
	if int64(cap(*buf)) < size+bytes.MinRead {
		*buf = make([]byte, 0, size+bytes.MinRead)
	}
	b := bytes.NewBuffer((*buf)[:0])
	_, err = b.ReadFrom(io.LimitReader(f, limit+1))
	body := b.Bytes()
	*buf = body[:0] // the buffer, grown if the file was
	if err != nil {
		return nil, modified, err
	}
	if int64(len(body)) > limit {
		return nil, modified, fmt.Errorf("parse: %w: %s is over %d bytes", ErrTooLarge, name, limit)
	}
	return body, modified, nil
}
