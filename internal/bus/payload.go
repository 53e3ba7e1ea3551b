package bus

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Raw payloads travel with their fetch records (docs/bus.md, "Payloads"):
// a worker's put adds to the stream entry of each fetch record the line
// feed-fetch wrote to its scratch store's fetches/ ("fetch") and the
// payload as stored there, zstd ("body"), and the same for each page
// fetch feed-scrape made for the group's entries; the coordinator's take
// checks both against the record and the key's shape, and writes them to
// the store of record as feed-fetch would have.

// DefaultMaxBodyBytes bounds a payload take accepts, decoded, as
// feed-parse's cap does.
const DefaultMaxBodyBytes = 64 << 20

// payloads is a put's access to its scratch store's fetch records.
type payloads struct {
	cat   *catalog.Catalog
	done  func()
	pages []string // page fetch ids named by the open group's entries
}

// notePage notes the fetch an entry of the open group came from: a page
// feed-scrape fetched, to be sent with the group.
func (p *putter) notePage(fetchID string) {
	if p.payloads == nil {
		p.payloads = &payloads{}
	}
	if ndjson.IsFetchID(fetchID) && !contains(p.payloads.pages, fetchID) {
		p.payloads.pages = append(p.payloads.pages, fetchID)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// attach adds to a fetch record's item its line in fetches/ and its
// payload, and the records and payloads of the pages its entries came
// from. What the store does not have is not sent; the coordinator then
// refuses the record, and says why.
func (p *putter) attach(ctx context.Context, it *item, fetchID string) error {
	if p.payloads == nil {
		p.payloads = &payloads{}
	}
	pl := p.payloads
	pages := pl.pages
	pl.pages = nil
	if pl.cat == nil {
		cat, done, err := catalog.Use(ctx, p.b.cfg.Catalog, p.b.cfg.Store, p.b.log)
		if err != nil {
			return fmt.Errorf("bus: the store's catalog: %w", err)
		}
		pl.cat, pl.done = cat, done
	}
	line, body, err := p.payload(ctx, fetchID)
	if err != nil {
		p.b.log.Warn("sending a fetch record without its payload: the coordinator will refuse it", "fetch_id", fetchID, "error", err)
		return nil
	}
	it.fields = append(it.fields, "fetch", string(line))
	if body != nil {
		it.fields = append(it.fields, "body", body)
	}
	for _, id := range pages {
		if id == fetchID {
			continue
		}
		line, body, err := p.payload(ctx, id)
		if err != nil {
			p.b.log.Warn("an entry's page is not sent: the coordinator's store will not have it", "fetch_id", id, "error", err)
			continue
		}
		fields := []any{"record", string(line)}
		if body != nil {
			fields = append(fields, "body", body)
		}
		it.pages = append(it.pages, fields)
	}
	it.fetchLine = true
	return nil
}

// payload reads a fetch record's line from the scratch store's fetches/
// and its payload from raw/ (nil when it has none).
func (p *putter) payload(ctx context.Context, fetchID string) (line, body []byte, err error) {
	cat := p.payloads.cat
	ref, ok, err := cat.Fetch(ctx, fetchID)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, errors.New("no such fetch in the store")
	}
	line, err = cat.Line(storedir.DirFetches, ref.Location)
	if err != nil {
		return nil, nil, err
	}
	if ref.BodyKey == "" {
		return line, nil, nil
	}
	if !ndjson.IsRawKey(ref.BodyKey) {
		return nil, nil, fmt.Errorf("payload key %q", ref.BodyKey)
	}
	body, err = p.b.cfg.Store.ReadFile(ref.BodyKey)
	return line, body, err
}

// closePayloads closes the catalog attach opened.
func (p *putter) closePayloads() {
	if p.payloads != nil && p.payloads.done != nil {
		p.payloads.done()
	}
}

// refusal is why take refuses a group: one line for people.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

func refuse(format string, args ...any) error { return &refusal{fmt.Sprintf(format, args...)} }

// decoders decode payloads with a bound on what they may decode to.
var decoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<30))
	if err != nil {
		panic(err)
	}
	return d
}}

// fetchHead is what take reads of a fetch record the stream carries with
// feed-fetch's line of it.
type fetchHead struct {
	ndjson.Header
	FetchID string `json:"fetch_id"`
	Due     struct {
		FeedID string         `json:"feed_id"`
		Bus    *ndjson.BusRef `json:"bus"`
	} `json:"due"`
	BodyRef       *ndjson.BlobRef `json:"body_ref"`
	BodySHA256    string          `json:"body_sha256"`
	ContentLength int64           `json:"content_length"`
	Page          *ndjson.Page    `json:"page"`
}

// checkedFetch is a fetch record take accepted, with what it stores.
type checkedFetch struct {
	// rec is the record as the stream carried it: whole without a fetch
	// line, else its fetch_id, due.feed_id, body_ref, body_sha256,
	// content_length and page only.
	rec    *ndjson.Fetch
	stored *ndjson.Fetch // as fetches/ keeps it: feed-fetch's record
	line   []byte        // and its line
	body   []byte        // the payload, decoded; nil when none came
	zst    []byte        // the payload as it came (zstd), stored as it is
	page   bool
}

// checkFetch checks a fetch record from the stream against the shapes of
// the store (Line.Decode's checks), the line feed-fetch wrote of it, and
// its payload against its body_sha256, its key and its length. It
// returns why a hostile or broken record is refused.
func checkFetch(record, fetchLine, body []byte, maxBody int64) (*checkedFetch, error) {
	if len(record) == 0 {
		return nil, refuse("the entry has no record")
	}
	l, err := ndjson.ParseLine(record)
	if err != nil {
		return nil, refuse("%s", lineErr(err))
	}
	var rec ndjson.Fetch
	if fetchLine == nil {
		if err := l.Decode(&rec); err != nil {
			return nil, refuse("%s", lineErr(err))
		}
	} else {
		// The stored record is the fetch line's, decoded whole below: of
		// the pipeline's, only what names the fetch and its payload.
		var h fetchHead
		if err := l.Decode(&h); err != nil {
			return nil, refuse("%s", lineErr(err))
		}
		rec = ndjson.Fetch{Header: h.Header, FetchID: h.FetchID, Due: ndjson.Due{FeedID: h.Due.FeedID, Bus: h.Due.Bus},
			BodyRef: h.BodyRef, BodySHA256: h.BodySHA256, ContentLength: h.ContentLength, Page: h.Page}
		if err := rec.Check(); err != nil {
			return nil, refuse("%s", lineErr(err))
		}
	}
	c := &checkedFetch{rec: &rec, page: rec.Page != nil}
	stored := rec
	if fetchLine != nil {
		fl, err := ndjson.ParseLine(fetchLine)
		if err == nil {
			err = fl.Decode(&stored)
		}
		if err != nil {
			return nil, refuse("its fetch line: %s", lineErr(err))
		}
		switch {
		case stored.FetchID != rec.FetchID:
			return nil, refuse("its fetch line is of fetch %s, not %s", stored.FetchID, rec.FetchID)
		case stored.Due.FeedID != rec.Due.FeedID:
			return nil, refuse("its fetch line is of feed %s, not %s", stored.Due.FeedID, rec.Due.FeedID)
		case stored.BodySHA256 != rec.BodySHA256 || (stored.BodyRef == nil) != (rec.BodyRef == nil) ||
			stored.BodyRef != nil && *stored.BodyRef != *rec.BodyRef:
			return nil, refuse("its fetch line names another payload than the record")
		}
	}
	// fetches/ keeps the record as feed-fetch wrote it: not what later
	// stages added, nor where the bus took it from.
	stored.Parse, stored.Scrape, stored.Dedup, stored.Due.Bus = nil, nil, nil, nil
	c.stored = &stored
	if c.line, err = ndjson.Marshal(&stored); err != nil {
		return nil, refuse("cannot encode it: %v", err)
	}
	if rec.BodyRef == nil {
		if body != nil {
			return nil, refuse("it has a payload but no body_ref")
		}
		return c, nil
	}
	if rec.BodyRef.Storage != storedir.RawStorage {
		return nil, refuse("body_ref.storage is %q, not %q", rec.BodyRef.Storage, storedir.RawStorage)
	}
	sum := strings.TrimSuffix(rec.BodyRef.Key[len("raw/YYYY-MM-DD/"):], ".zst")
	if sum != rec.BodySHA256 {
		return nil, refuse("body_sha256 %s is not the sha256 its key %s names", short(rec.BodySHA256), rec.BodyRef.Key)
	}
	if body == nil {
		return c, nil // the store may have it (see storeFetches)
	}
	dec := decoders.Get().(*zstd.Decoder)
	defer decoders.Put(dec)
	if err := dec.Reset(bytes.NewReader(body)); err != nil {
		return nil, refuse("its payload is not zstd: %v", err)
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(dec, maxBody+1))
	switch {
	case err != nil:
		return nil, refuse("its payload does not decode: %v", err)
	case n > maxBody:
		return nil, refuse("its payload decodes to more than %d bytes", maxBody)
	}
	c.body, c.zst = buf.Bytes(), body
	got := sha256.Sum256(c.body)
	if hex.EncodeToString(got[:]) != rec.BodySHA256 {
		return nil, refuse("its payload does not match its body_sha256 %s (it hashes to %s)", short(rec.BodySHA256), short(hex.EncodeToString(got[:])))
	}
	if rec.ContentLength != int64(len(c.body)) {
		return nil, refuse("its payload is %d bytes, its content_length %d", len(c.body), rec.ContentLength)
	}
	return c, nil
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12] + "..."
	}
	return strconv.Quote(sum)
}

// lineErr is a record's error without the line number, which means
// nothing for a stream entry.
func lineErr(err error) string {
	var le *ndjson.LineError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}
