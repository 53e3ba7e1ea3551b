package media

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/html"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/clock"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Config is everything feed-media touches: the stage (Run) reads In and
// writes Out; a run (Drain) writes its media records to Out and takes the
// rest.
type Config struct {
	In      io.Reader
	Out     *ndjson.Writer
	Log     *slog.Logger
	Store   *storedir.Store
	Catalog *catalog.Catalog // the store's catalog; nil: opened for the run
	Clock   clock.Clock      // nil: the wall clock

	// The downloads (Drain).
	Client  *httpx.Client
	Limiter *httpx.Limiter // per host, as feed-fetch's
	// HostConcurrency is how many files of one host are downloaded at
	// once (the Limiter's too); Concurrency how many in all.
	HostConcurrency, Concurrency int
	// MaxFileBytes caps a file of a feed whose settings set no cap.
	MaxFileBytes int64
	// DailyBudget is the most bytes downloaded in a UTC day, the bytes of
	// every try counted; 0: no budget.
	DailyBudget int64
	// DiskFloor is the free space of the store's file system under which
	// nothing is downloaded: a download under way stops, kept to resume.
	DiskFloor int64
	// FileTimeout bounds one try at a file, body included; 0: none.
	FileTimeout time.Duration
	// MaxAttempts is how many tries a file that keeps failing for now
	// gets before it is given up (failed).
	MaxAttempts int
	// Follow keeps Drain waiting for files to be queued, looking every
	// Poll, until ctx ends; without it, Drain returns once no file is due.
	Follow bool
	Poll   time.Duration
	// SyncEvery is how many bytes of a download are written between two
	// syncs of its partial file, each recorded as where a resume starts;
	// SyncInterval the longest time between two, for a slow download.
	SyncEvery    int64
	SyncInterval time.Duration
}

// Defaults of Config.
const (
	DefaultConcurrency  = 2
	DefaultMaxFileBytes = 2 << 30
	DefaultDiskFloor    = 1 << 30
	DefaultMaxAttempts  = 8
	DefaultFileTimeout  = 2 * time.Hour
	DefaultPoll         = 30 * time.Second
	DefaultSyncEvery    = 16 << 20
	DefaultSyncInterval = 2 * time.Second
	// MaxImages is how many images of one entry are taken at most.
	MaxImages = 20
)

func (cfg *Config) defaults() {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Out == nil {
		cfg.Out = ndjson.NewWriter(io.Discard)
	}
	if cfg.Concurrency < 1 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.HostConcurrency < 1 {
		cfg.HostConcurrency = httpx.DefaultHostConcurrency
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	if cfg.MaxAttempts < 1 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.SyncEvery <= 0 {
		cfg.SyncEvery = DefaultSyncEvery
	}
	if cfg.SyncInterval <= 0 {
		cfg.SyncInterval = DefaultSyncInterval
	}
	if cfg.Client == nil {
		cfg.Client = httpx.New(httpx.Options{})
	}
	if cfg.Limiter == nil {
		cfg.Limiter = httpx.NewLimiter(cfg.HostConcurrency, httpx.DefaultHostRPS, cfg.Clock)
	}
}

// StageSummary counts what the stage queued.
type StageSummary struct {
	Events  int // new_entry and updated_entry events read
	Entries int // of entries of feeds with media settings
	Queued  int // files queued
	Skipped int // enclosures of a type the feed does not take
}

// queueBatch is how many files are queued in one transaction.
const queueBatch = 500

// Run is the feed-media stage: it passes every record on, unchanged and in
// order, and queues the files of each entry a new_entry or updated_entry
// event announces whose feed has media settings: its enclosures whose
// declared type the feed takes (or that declare none, or only
// application/octet-stream: the response decides), and, with images on,
// the images its content links to. It downloads nothing: feed-media run
// does, at a pace of its own, so that a long download never holds up the
// cycle. A file already queued, stored or refused for the entry is not
// queued again, so that feeding the stage old events again is harmless.
func Run(ctx context.Context, cfg Config) (StageSummary, error) {
	cfg.defaults()
	var sum StageSummary
	// A signal does not stop the stage: it reads to the end of its input
	// (pipe.Drain), which ends once the stages upstream have stopped.
	ctx = pipe.Drain(ctx)
	cat, done, err := catalog.Use(ctx, cfg.Catalog, cfg.Store, cfg.Log)
	if err != nil {
		return sum, err
	}
	defer done()
	subs, err := cat.Subscriptions(ctx)
	if err != nil {
		return sum, err
	}
	settings := map[string]*ndjson.MediaSettings{}
	for _, s := range subs {
		if s.Media.On() {
			settings[s.FeedID] = s.Media
		}
	}
	var (
		fails pipe.Failures
		wants []catalog.MediaWant
	)
	flush := func() error {
		n, err := cat.QueueMedia(ctx, wants, cfg.Clock.Now())
		sum.Queued += n
		wants = wants[:0]
		return err
	}
	in := pipe.Decoded(cfg.In, ndjson.TypeNewEntry, ndjson.TypeUpdatedEntry)
	err = pipe.EachFrom(ctx, in, cfg.Log, &fails, func(line ndjson.Line) error {
		if line.Type != ndjson.TypeNewEntry && line.Type != ndjson.TypeUpdatedEntry {
			return cfg.Out.WriteRaw(line.Raw)
		}
		var ev ndjson.Event
		if !pipe.Decode(line, &ev, cfg.Log, &fails) {
			return nil
		}
		sum.Events++
		if m := settings[ev.FeedID]; m != nil {
			sum.Entries++
			found, skipped, err := entryFiles(ctx, cat, &ev, m)
			if err != nil {
				return err
			}
			wants = append(wants, found...)
			sum.Skipped += skipped
			if len(wants) >= queueBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return cfg.Out.WriteRaw(line.Raw)
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return sum, err
	}
	if err := cfg.Out.Flush(); err != nil {
		return sum, fmt.Errorf("write stdout: %w", err)
	}
	if sum.Entries > 0 {
		cfg.Log.Info("queued media", "files", sum.Queued, "entries", sum.Entries, "events", sum.Events, "enclosures_skipped", sum.Skipped)
	}
	return sum, fails.Err("event", "events")
}

// entryFiles are the files of the entry an event announces that the feed's
// settings ask for, and how many enclosures they leave out.
func entryFiles(ctx context.Context, cat *catalog.Catalog, ev *ndjson.Event, m *ndjson.MediaSettings) ([]catalog.MediaWant, int, error) {
	row, ok, err := cat.EntryOf(ctx, ev.FeedID, ev.EntryUID)
	if err != nil || !ok {
		return nil, 0, err // pruned since, or not stored: nothing to queue
	}
	e, err := cat.Entry(row)
	if err != nil {
		return nil, 0, err
	}
	var out []catalog.MediaWant
	skipped := 0
	seen := map[string]bool{}
	want := func(u, kind string) {
		if !seen[u] {
			seen[u] = true
			out = append(out, catalog.MediaWant{FeedID: e.FeedID, EntryUID: e.EntryUID, URL: u, Kind: kind})
		}
	}
	for _, enc := range e.Enclosures {
		u := Absolute(enc.URL, e.CanonicalLink)
		switch {
		case u == "":
		case len(m.Types) == 0, !Generic(enc.Type) && !Allowed(m.Types, enc.Type):
			skipped++
		default:
			want(u, ndjson.MediaEnclosure)
		}
	}
	if m.Images {
		for _, u := range Images(e.Content+e.Summary, e.CanonicalLink, MaxImages) {
			want(u, ndjson.MediaImage)
		}
	}
	return out, skipped, nil
}

// Absolute is the URL of a file an entry names, as its row keeps it: ref
// made absolute against base (the entry's link), without its fragment,
// when it is an http or https URL; "" otherwise.
func Absolute(ref, base string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" || strings.HasPrefix(ref, "data:") {
		return ""
	}
	r, err := url.Parse(ref)
	if err != nil {
		return ""
	}
	if b, err := url.Parse(base); err == nil && base != "" {
		r = b.ResolveReference(r)
	}
	if (r.Scheme != "http" && r.Scheme != "https") || r.Host == "" {
		return ""
	}
	if _, err := urlnorm.Parse(r.String()); err != nil {
		return ""
	}
	r.Fragment = ""
	return r.String()
}

// Images returns the URLs of the images an entry's HTML links to (img
// src), made absolute against base, http and https only, each once, max
// at most.
func Images(htmlText, base string, max int) []string {
	var out []string
	seen := map[string]bool{}
	z := html.NewTokenizer(strings.NewReader(htmlText))
	for len(out) < max {
		switch z.Next() {
		case html.ErrorToken:
			return out
		case html.StartTagToken, html.SelfClosingTagToken:
			name, attrs := z.TagName()
			if string(name) != "img" || !attrs {
				continue
			}
			for {
				k, v, more := z.TagAttr()
				if string(k) == "src" {
					if u := Absolute(string(v), base); u != "" && !seen[u] {
						seen[u] = true
						out = append(out, u)
					}
				}
				if !more {
					break
				}
			}
		}
	}
	return out
}
