// Package parse is feed-parse: it turns fetched payloads into normalized
// entries and completes each fetch record with what it found.
package parse

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"time"

	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Config is everything feed-parse touches.
type Config struct {
	In    io.Reader
	Out   *ndjson.Writer
	Log   *slog.Logger
	Store *storedir.Store
	// Parser parses the payloads; nil means DefaultParser.
	Parser *Parser
	// Workers is how many payloads are parsed at once; 0 means one per
	// CPU (GOMAXPROCS). The output is in input order whatever it is.
	Workers int
}

func (cfg *Config) defaults() {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Parser == nil {
		cfg.Parser = DefaultParser
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
}

// Run reads fetch records, and for each one whose payload is a feed, writes
// its entries followed by the record with its parse section. Records of
// other types, and fetches with nothing to parse (304s, errors, websites,
// pages feed-scrape fetched), pass through unchanged. A payload that is not a feed gets a parse error
// in its record and makes Run return an error matching pipe.ErrFailed at
// the end.
//
// Payloads are parsed by cfg.Workers at once; each feed's records are
// written together, and all in the order of the input.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	var fails pipe.Failures
	failed, parsed, entries := 0, 0, 0
	o := startOrdered(cfg.Workers, func(j *job) error {
		if j.failed {
			failed++
		}
		entries += bytes.Count(j.out, []byte("\n")) // a feed's entries, before its fetch record
		err := cfg.Out.WriteRaw(j.out)
		j.release()
		return err
	})
	in := pipe.Decoded(cfg.In, ndjson.TypeFetch)
	err := pipe.EachFrom(pipe.Drain(ctx), in, cfg.Log, &fails, func(line ndjson.Line) error {
		j := &job{}
		if line.Type != ndjson.TypeFetch {
			j.out = bytes.Clone(line.Raw)
			return o.submit(j)
		}
		var f ndjson.Fetch
		if !pipe.Decode(line, &f, cfg.Log, &fails) {
			return nil
		}
		if !parseable(&f) {
			j.out = bytes.Clone(line.Raw)
			return o.submit(j)
		}
		j.run = func() { cfg.parseJob(j, &f) }
		parsed++
		return o.submit(j)
	})
	if werr := o.close(); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	if err := cfg.Out.Flush(); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	fails.Records += failed
	cfg.Log.Info("parse done", "payloads", parsed, "failed", failed, "entries", entries)
	return fails.Err("payload", "payloads")
}

// parseJob parses one fetch's payload into j.out: its entries, then the
// record.
func (cfg *Config) parseJob(j *job, f *ndjson.Fetch) {
	entries := cfg.parseFetch(f)
	j.failed = f.Parse.Error != ""
	j.encode(entries, f, func(what string, err error) {
		cfg.Log.Error("cannot encode "+what, "fetch_id", f.FetchID, "error", err)
	})
}

// parseable reports whether a fetch brought a feed body to parse
// (ndjson.Fetch.HasBody). Website sources, and the pages feed-scrape
// fetched for a source (Page set: list pages, articles, full texts of feed
// entries), are HTML for feed-scrape.
func parseable(f *ndjson.Fetch) bool {
	return f.HasBody() && f.Due.SourceType != ndjson.SourceWebsite && f.Page == nil
}

// errorCode is the fetch record's error code for a failed parse.
func errorCode(err error) string {
	switch {
	case errors.Is(err, ErrNotAFeed):
		return "not_a_feed"
	case errors.Is(err, ErrTooDeep):
		return "too_deep"
	case errors.Is(err, ErrTooManyItems):
		return "too_many_items"
	case errors.Is(err, ErrTooLarge), errors.Is(err, storedir.ErrRawTooLarge):
		return "payload_too_large"
	}
	return "parse_failed"
}

// parseFetch loads and parses the fetch's payload, fills f.Parse (and
// f.Error when it fails) and returns the entries to emit.
func (cfg *Config) parseFetch(f *ndjson.Fetch) []ndjson.Entry {
	log := cfg.Log.With("feed_id", f.Due.FeedID, "fetch_id", f.FetchID)
	fail := func(code string, err error) []ndjson.Entry {
		f.Parse = &ndjson.Parse{SkipHours: []int{}, SkipDays: []string{}, Hubs: []string{}, Warnings: []string{}, Error: err.Error()}
		if f.Error == nil {
			msg := err.Error()
			if code == "not_a_feed" && !errors.Is(err, ErrBinary) { // most often a web page, subscribed to by mistake
				msg += "; if it is a web page, feed-sub discover " + cmp.Or(f.Due.URL, f.URL) + " lists the feeds it links to"
			}
			f.Error = &ndjson.Error{Class: ndjson.ClassParse, Code: code, Message: msg}
		}
		level := slog.LevelWarn
		if code == "not_a_feed" { // a permanent error: the feed is disabled for it
			level = slog.LevelError
		}
		log.Log(context.Background(), level, "cannot parse payload", "url", f.URL, "code", code, "error", err)
		return nil
	}
	start := time.Now()
	body, err := cfg.Store.GetRaw(f.BodyRef.Key, positiveOr(cfg.Parser.MaxBodyBytes, MaxBodyBytes))
	if errors.Is(err, storedir.ErrRawTooLarge) {
		return fail("payload_too_large", err)
	}
	if err != nil {
		return fail("payload_unreadable", err)
	}
	feed, err := cfg.Parser.Parse(body, Source{FeedID: f.Due.FeedID, FetchID: f.FetchID, BaseURL: f.URL, ContentType: f.ContentType, Now: f.FetchedAt.Time})
	if err != nil {
		return fail(errorCode(err), err)
	}
	entries := limit(feed, f.Due.ItemLimit)
	f.Parse = &feed.Info
	for _, w := range feed.Info.Warnings {
		log.Debug("recovered", "url", f.URL, "warning", w)
	}
	log.Debug("parsed", "format", feed.Info.Format, "items", feed.Info.Items, "entries", feed.Info.Entries, "elapsed_ms", time.Since(start).Milliseconds())
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
