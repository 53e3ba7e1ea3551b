package fetch

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// fetchOne fetches one feed and stores its payload; last says no other
// feed of its host is queued, and slot is the fetch's turn at its host
// (the client ends it early if a redirect leaves the host).
func (cfg *Config) fetchOne(ctx context.Context, due ndjson.Due, last bool, slot httpx.Slot) *ndjson.Fetch {
	fetchedAt := cfg.Clock.Now()
	f := &ndjson.Fetch{
		Header:       ndjson.Head(ndjson.TypeFetch),
		Due:          recordedDue(due),
		RequestedURL: due.URL,
		URL:          due.URL,
		Redirects:    []ndjson.Redirect{},
		FetchedAt:    ndjson.At(fetchedAt),
	}
	id, err := ids.FetchID(fetchedAt, cfg.Rand)
	if err != nil {
		f.Error = &ndjson.Error{Class: ndjson.ClassTransient, Code: "internal", Message: err.Error()}
		return f
	}
	f.FetchID = id
	// Made only for a line that is logged: With costs allocations on
	// every fetch, even at a level that drops them.
	log := func() *slog.Logger { return cfg.Log.With("feed_id", due.FeedID, "fetch_id", id) }

	req := httpx.Request{URL: due.URL, Validators: due.Validators, UserAgent: due.UserAgent, LastToHost: last,
		Limiter: cfg.Limiter, Release: slot.Release, Unsent: slot.Unsent}
	if len(due.Headers) > 0 {
		req.Header = http.Header{}
		for k, v := range due.Headers {
			req.Header.Set(k, v)
		}
	}
	if due.Auth != nil {
		req.Auth = &httpx.BasicAuth{Username: due.Auth.Username, Password: due.Auth.Password}
	}
	client := cfg.Client
	if cfg.private[due.FeedID] { // the subscription's, not the record's say
		client = client.Private()
	}
	r := client.Get(ctx, req)
	f.URL = r.URL
	if r.Redirects != nil {
		f.Redirects = r.Redirects
	}
	f.DurationMS = r.Duration.Milliseconds()
	f.HTTPStatus = r.Status
	f.NotModified = r.NotModified
	f.RequestHeaders = httpx.Flatten(r.RequestHeader)
	f.ResponseHeaders = httpx.Flatten(r.Header)
	f.ContentType = r.Header.Get("Content-Type")
	f.Truncated = r.Truncated
	if r.HasRetryAfter {
		// Retry-After counts from the response, retry_after_sec from
		// fetched_at, the request's start: a slow answer's time is added
		// (to the nearest second, so that a quick one keeps the
		// server's number).
		f.RetryAfterSec = int((r.RetryAfter+time.Second-1)/time.Second) + int(r.Duration.Round(time.Second)/time.Second)
	}
	f.Error = r.Err
	if r.NotModified {
		f.BytesSaved = due.Last.ContentLength // the body we did not download again
	}
	cfg.movedPermanently(f, r.PermanentRedirect(), due.Last)
	if r.Status != 0 && !r.NotModified {
		key, sum, err := cfg.Store.PutNewRaw(fetchedAt, r.Body, due.Last.BodySHA256)
		if err != nil {
			// The payload is lost, so the record must say so; the
			// writer stops the run on the same broken store soon after.
			f.Error = &ndjson.Error{Class: ndjson.ClassTransient, Code: "store", Message: err.Error()}
			log().Error("cannot store payload", "error", err)
			return f
		}
		f.BodyRef = &ndjson.BlobRef{Storage: storedir.RawStorage, Key: key}
		f.BodySHA256 = sum
		f.ContentLength = int64(len(r.Body))
		// A 200 with the very body we had: the server ignored our
		// validators, or has none.
		f.Unchanged = f.Error == nil && sum == due.Last.BodySHA256
	}
	if r.Duration > cfg.SlowAfter {
		log().Warn("slow fetch", "url", due.URL, "status", r.Status, "elapsed_ms", f.DurationMS)
	}
	if f.Error != nil {
		// Each failure is reported; a permanent one, which disables the
		// feed, as an error.
		level := slog.LevelWarn
		if f.Error.Class == ndjson.ClassPermanent && !isArchive(&due) { // an archive page's ends a walk, not the feed
			level = slog.LevelError
		}
		log().Log(ctx, level, "fetch failed", "url", due.URL, "status", r.Status, "class", f.Error.Class, "code", f.Error.Code, "error", f.Error.Message, "elapsed_ms", f.DurationMS)
	} else if cfg.Log.Enabled(ctx, slog.LevelDebug) {
		log().Debug("fetched", "url", due.URL, "status", r.Status, "bytes", f.ContentLength, "unchanged", f.Unchanged, "elapsed_ms", f.DurationMS)
	}
	return f
}

// movedPermanently counts the fetches in a row that were moved permanently
// to one URL, and proposes it as the feed's new URL once the count reaches
// the threshold. A temporary redirect, or none, starts the count again.
func (cfg *Config) movedPermanently(f *ndjson.Fetch, to string, last ndjson.LastFetch) {
	if to == "" {
		return
	}
	f.MovedTo, f.MovedCount = to, 1
	if to == last.MovedTo {
		f.MovedCount = last.MovedCount + 1
	}
	if f.MovedCount >= cfg.RedirectThreshold {
		f.NewURL = to
		cfg.Log.Info("feed moved permanently", "feed_id", f.Due.FeedID, "url", f.RequestedURL, "new_url", to, "fetches", f.MovedCount)
	}
}

// recordedDue is the due record as a fetch record keeps it: without the
// password, and with its headers' values redacted.
func recordedDue(due ndjson.Due) ndjson.Due {
	due.Headers = httpx.RedactHeaderMap(due.Headers)
	if due.Auth != nil {
		due.Auth = &ndjson.Auth{Username: due.Auth.Username, Password: "(redacted)"}
	}
	return due
}
