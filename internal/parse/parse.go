// Package parse is feed-parse: it turns fetched payloads into normalized
// entries and completes each fetch record with what it found.
package parse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// MaxBodyBytes caps the payloads feed-parse will load from the store.
const MaxBodyBytes = 64 << 20

// Config is everything feed-parse touches.
type Config struct {
	In    io.Reader
	Out   *ndjson.Writer
	Log   *slog.Logger
	Store *storage.Store
}

// Run reads fetch records, and for each one whose payload is a feed, writes
// its entries followed by the record with its parse section. Records of
// other types, and fetches with nothing to parse (304s, errors, websites),
// pass through unchanged. A payload that is not a feed gets a parse error
// in its record and makes Run return an error matching pipe.ErrFailed at
// the end.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	var fails pipe.Failures
	err := pipe.Each(pipe.Drain(ctx), cfg.In, cfg.Log, &fails, func(line ndjson.Line) error {
		if line.Type != ndjson.TypeFetch {
			return cfg.Out.WriteRaw(line.Raw)
		}
		var f ndjson.Fetch
		if !pipe.Decode(line, &f, cfg.Log, &fails) {
			return nil
		}
		if !parseable(&f) {
			return cfg.Out.WriteRaw(line.Raw)
		}
		entries := cfg.parseFetch(&f)
		if f.Parse.Error != "" {
			fails.Records++
		}
		for i := range entries {
			if err := cfg.Out.Write(&entries[i]); err != nil {
				return err
			}
		}
		return cfg.Out.Write(&f)
	})
	if err != nil {
		return err
	}
	if err := cfg.Out.Flush(); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	return fails.Err("payload", "payloads")
}

// parseable reports whether a fetch brought a feed body to parse. A body
// cut at the size cap is still parsed: its complete items are worth having.
// A body the same as the last one (unchanged) holds nothing new.
func parseable(f *ndjson.Fetch) bool {
	if f.BodyRef == nil || f.NotModified || f.Unchanged || f.HTTPStatus < 200 || f.HTTPStatus > 299 || f.Due.SourceType == ndjson.SourceWebsite {
		return false
	}
	return f.Error == nil || f.Error.Code == "body_too_large"
}

// parseFetch loads and parses the fetch's payload, fills f.Parse (and
// f.Error when it fails) and returns the entries to emit.
func (cfg *Config) parseFetch(f *ndjson.Fetch) []ndjson.Entry {
	log := cfg.Log.With("feed_id", f.Due.FeedID, "fetch_id", f.FetchID)
	fail := func(code string, err error) []ndjson.Entry {
		f.Parse = &ndjson.Parse{SkipHours: []int{}, SkipDays: []string{}, Warnings: []string{}, Error: err.Error()}
		if f.Error == nil {
			f.Error = &ndjson.Error{Class: ndjson.ClassParse, Code: code, Message: err.Error()}
		}
		log.Warn("cannot parse payload", "url", f.URL, "error", err)
		return nil
	}
	body, err := cfg.Store.GetRaw(f.BodyRef.Key, MaxBodyBytes)
	if err != nil {
		return fail("payload_unreadable", err)
	}
	feed, err := ParseFeed(body, Source{FeedID: f.Due.FeedID, FetchID: f.FetchID, BaseURL: f.URL})
	if err != nil {
		code := "parse_failed"
		if errors.Is(err, ErrNotAFeed) {
			code = "not_a_feed"
		}
		return fail(code, err)
	}
	entries := limit(feed, f.Due.ItemLimit)
	f.Parse = &feed.Info
	log.Debug("parsed", "format", feed.Info.Format, "items", feed.Info.Items, "entries", feed.Info.Entries)
	return entries
}

// limit applies an item limit (0 = none), keeping the most recent entries
// in document order, and fills in the counts and date range of info.
func limit(feed *Feed, itemLimit int) []ndjson.Entry {
	order := newestOrder(feed.Entries)
	entries := feed.Entries
	if itemLimit > 0 && len(entries) > itemLimit {
		keep := make([]bool, len(entries))
		for _, i := range order[:itemLimit] {
			keep[i] = true
		}
		entries = make([]ndjson.Entry, 0, itemLimit)
		for i, e := range feed.Entries {
			if keep[i] {
				entries = append(entries, e)
			}
		}
	}
	feed.Info.Entries = len(entries)
	for _, i := range order {
		if p := feed.Entries[i].Published; !p.IsZero() {
			if feed.Info.NewestPublished.IsZero() {
				feed.Info.NewestPublished = p
			}
			feed.Info.OldestPublished = p
		}
	}
	return entries
}

// FileConfig is feed-parse run over payload files instead of fetch records.
type FileConfig struct {
	Out     *ndjson.Writer
	Log     *slog.Logger
	Store   *storage.Store // reads .zst payloads; may be nil for plain files
	FeedID  string
	BaseURL string
	Files   []string
}

// RunFiles parses each file (a raw payload, plain or .zst as the store
// keeps it) and writes its entries. A file that cannot be read or parsed
// is reported and skipped; the others go on.
func RunFiles(ctx context.Context, cfg FileConfig) error {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	var fails pipe.Failures
	for _, name := range cfg.Files {
		if ctx.Err() != nil {
			break
		}
		feed, err := parseFile(cfg, name)
		if err != nil {
			fails.Records++
			cfg.Log.Error("cannot parse file", "file", name, "error", err)
			continue
		}
		for i := range feed.Entries {
			if err := cfg.Out.Write(&feed.Entries[i]); err != nil {
				return err
			}
		}
	}
	if err := cfg.Out.Flush(); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	return fails.Err("file", "files")
}

func parseFile(cfg FileConfig, name string) (*Feed, error) {
	var body []byte
	var err error
	if strings.HasSuffix(name, ".zst") && cfg.Store != nil {
		body, err = cfg.Store.GetRawFile(name, MaxBodyBytes)
	} else {
		body, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, err
	}
	return ParseFeed(body, Source{FeedID: cfg.FeedID, BaseURL: cfg.BaseURL})
}
