package scrape

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/net/publicsuffix"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/extract"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Validation of scraped articles (docs/design.md#scraping).
const (
	MaxTitleRunes = 500
	// FutureTolerance is how far ahead of the clock a publication date may
	// be: a date without a time is midnight UTC, up to 14 hours ahead of
	// the moment it names in a time zone east of UTC.
	FutureTolerance = 24 * time.Hour
	// MaxRejections caps the rejections listed in a scrape section; the
	// count stays exact.
	MaxRejections = 50
	// MaxPayloadBytes caps the payloads feed-scrape loads from the store.
	MaxPayloadBytes = 64 << 20
	// RejectedFor is how long a list's article rejected for what its
	// page held is not fetched again (with the same scraper
	// configuration): the site may mend it.
	RejectedFor = 7 * 24 * time.Hour
)

// remembered are the reasons an article is remembered as rejected for:
// what its page held, and robots.txt, which change seldom. An article that
// could not be fetched is tried again at the next run.
var remembered = map[string]bool{ReasonRobots: true, ReasonNotHTML: true, ReasonMissingTitle: true, ReasonLongTitle: true,
	ReasonFutureDate: true, ReasonTooOld: true, ReasonNoContent: true}

// MinPublished is the earliest publication date an article may have.
var MinPublished = time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)

// Reasons an article is rejected (ndjson.Rejection.Reason).
const (
	ReasonInvalidURL   = "invalid_url"
	ReasonOtherSite    = "other_site"
	ReasonRobots       = "robots_disallowed"
	ReasonFetchFailed  = "fetch_failed"
	ReasonNotHTML      = "not_html"
	ReasonMissingTitle = "missing_title"
	ReasonLongTitle    = "title_too_long"
	ReasonFutureDate   = "future_date"
	ReasonTooOld       = "too_old"
	ReasonNoContent    = "no_content"
)

// htmlAccept asks for a page rather than a feed.
const htmlAccept = "text/html, application/xhtml+xml;q=0.9, */*;q=0.5"

type jobKind int

const (
	kindNone jobKind = iota
	kindWebsite
	kindFulltext
)

// kindOf decides what the fetch record f asks of feed-scrape, given the
// entries held before it.
func (s *stage) kindOf(f *ndjson.Fetch, pending []held) jobKind {
	switch {
	case f.Due.SourceType == ndjson.SourceWebsite:
		if f.HasBody() {
			return kindWebsite
		}
	case f.Due.Fulltext:
		for _, h := range pending {
			if h.entry != nil && h.entry.RawRef.FetchID == f.FetchID {
				return kindFulltext
			}
		}
	}
	return kindNone
}

// job is the work on one source's fetch record.
type job struct {
	s     *stage
	f     *ndjson.Fetch
	log   *slog.Logger
	sc    *ndjson.Scrape
	pages []*ndjson.Fetch // fetch records of the pages fetched, to store
	ctx   context.Context // canceled by a signal: no new fetches
	fatal error           // the store cannot be written
	// lastReason is the reason of the last rejection; rejected, the
	// list's articles rejected by this run to remember (by entry uid).
	lastReason string
	rejected   map[string]catalog.Rejection
}

// runJob scrapes one source and returns its output: the held records (the
// group's entries completed for full text), the new entries, and the fetch
// record with its scrape section. The fetch records of the pages it
// fetched are stored, synced, before anything is returned.
func (s *stage) runJob(ctx context.Context, f *ndjson.Fetch, kind jobKind, group []held) ([]output, error) {
	j := &job{s: s, f: f, ctx: ctx, log: s.cfg.Log.With("feed_id", f.Due.FeedID, "fetch_id", f.FetchID),
		sc: &ndjson.Scrape{Rejections: []ndjson.Rejection{}}}
	s.stats.sources.Add(1)
	var out []output
	switch kind {
	case kindWebsite:
		for _, h := range group {
			out = append(out, output{raw: h.raw})
		}
		for _, e := range j.website() {
			out = append(out, output{rec: e})
		}
	case kindFulltext:
		j.sc.Mode = ndjson.ScrapeFulltext
		for _, h := range group {
			if h.entry == nil || h.entry.RawRef.FetchID != f.FetchID || h.entry.FeedID != f.Due.FeedID {
				out = append(out, output{raw: h.raw})
				continue
			}
			if e := j.fulltext(h.entry); e != nil {
				out = append(out, output{rec: e})
			} else {
				out = append(out, output{raw: h.raw})
			}
		}
	}
	if j.fatal != nil {
		return nil, j.fatal
	}
	if err := j.persist(); err != nil {
		return nil, err
	}
	f.Scrape = j.sc
	if j.sc.Error != "" {
		s.stats.failed.Add(1)
	}
	s.stats.pages.Add(int64(j.sc.PagesFetched))
	s.stats.found.Add(int64(j.sc.ArticlesFound))
	s.stats.known.Add(int64(j.sc.Known))
	s.stats.fresh.Add(int64(j.sc.New))
	s.stats.rejected.Add(int64(j.sc.Rejected))
	j.log.Debug("scraped", "url", f.URL, "mode", j.sc.Mode, "pages_fetched", j.sc.PagesFetched, "articles_found", j.sc.ArticlesFound,
		"known", j.sc.Known, "new", j.sc.New, "rejected", j.sc.Rejected)
	return append(out, output{rec: f}), nil
}

// fail marks the source as not scrapable at all.
func (j *job) fail(code string, err error) {
	j.sc.Error = err.Error()
	if j.f.Error == nil {
		j.f.Error = &ndjson.Error{Class: ndjson.ClassParse, Code: code, Message: err.Error()}
	}
	j.log.Error("cannot scrape the source", "url", j.f.URL, "code", code, "error", err)
}

// reject records an article left out, and why.
func (j *job) reject(rawURL, reason, message string) {
	j.lastReason = reason
	j.sc.Rejected++
	if len(j.sc.Rejections) < MaxRejections {
		j.sc.Rejections = append(j.sc.Rejections, ndjson.Rejection{URL: rawURL, Reason: reason, Message: message})
	}
	j.log.Debug("article rejected", "url", rawURL, "reason", reason, "message", message)
}

// config returns the source's scrape configuration; nil if it has none.
func (j *job) config() (*ndjson.ScrapeConfig, *extract.Rules, error) {
	conf, err := extract.ParseConfig(j.f.Due.Scrape, false)
	if err != nil {
		return nil, nil, err
	}
	var ac *ndjson.ArticleConfig
	if conf != nil {
		ac = &conf.ArticleConfig
	}
	rules, err := extract.CompileRules(ac)
	return conf, rules, err
}

// website scrapes a website source's page and returns its entries.
func (j *job) website() []*ndjson.Entry {
	conf, rules, err := j.config()
	if err != nil {
		j.sc.Mode = ndjson.ModeDirect
		j.fail("scrape_config", err)
		return nil
	}
	j.sc.Mode = ndjson.ModeDirect
	if conf != nil && conf.DiscoveryMode == ndjson.ModeList {
		j.sc.Mode = ndjson.ModeList
	}
	body, err := j.s.cfg.Store.GetRaw(j.f.BodyRef.Key, MaxPayloadBytes)
	if err != nil {
		j.fail("payload_unreadable", err)
		return nil
	}
	page, err := extract.NewPage(body, j.f.ContentType, j.f.URL)
	if err != nil {
		j.fail("not_html", err)
		return nil
	}
	idx := j.s.index(j.f.Due.FeedID)
	if j.sc.Mode == ndjson.ModeList {
		return j.list(page, conf, rules, idx)
	}

	// Direct mode: the page is the article. It is written even when
	// stored already, for feed-dedup to tell an edit from a repeat.
	j.sc.ArticlesFound = 1
	art := page.Article(rules)
	final, _ := normalize(j.f.URL)
	native := final
	if c := j.canonical(art.Canonical, final); c != "" {
		native = c
	}
	e := j.entry(art, native, final, j.f.FetchID)
	if e == nil {
		return nil
	}
	switch stored, err := idx.stored(e.EntryUID); {
	case err != nil:
		j.fatal = err
		return nil
	case stored:
		j.sc.Known++
	default:
		j.sc.New++
	}
	return []*ndjson.Entry{e}
}

// list reads a list page and the pages after it, fetches the articles not
// stored yet and returns their entries.
func (j *job) list(page *extract.Page, conf *ndjson.ScrapeConfig, rules *extract.Rules, idx *feedIndex) []*ndjson.Entry {
	articles, _ := extract.CompileSelector(conf.ListConfig.ArticleSelector)
	next, _ := extract.CompileSelector(conf.ListConfig.PaginationSelector)
	limit, maxPages := j.f.Due.ItemLimit, extract.MaxPages(conf)
	source, _ := normalize(j.f.URL)
	// Articles an earlier run rejected, read with this configuration.
	config := strconv.FormatUint(xxhash.Sum64(j.f.Due.Scrape), 16)
	before, err := j.s.cfg.Catalog.Rejections(j.s.catCtx, j.f.Due.FeedID)
	if err != nil {
		j.fatal = err
		return nil
	}
	now := j.s.cfg.Clock.Now()
	visited := map[string]bool{source: true}
	seen := map[string]bool{}
	var entries []*ndjson.Entry
	for n := 1; ; n++ {
		links := page.Links(articles)
		if len(links) == 0 {
			j.log.Warn("no article links on a list page: has the site changed? (list_config.article_selector)", "url", page.URL.String(), "selector", articles.String())
		}
		allKnown := len(links) > 0
		for _, link := range links {
			if limit > 0 && j.sc.ArticlesFound >= limit {
				return entries
			}
			u, err := normalize(link)
			if err != nil {
				// Rejected without a fetch, as at every run: nothing to
				// follow pagination for.
				j.sc.ArticlesFound++
				j.reject(link, ReasonInvalidURL, strings.TrimPrefix(err.Error(), "urlnorm: "))
				continue
			}
			if seen[u] {
				continue // linked twice
			}
			seen[u] = true
			j.sc.ArticlesFound++
			uid := ids.EntryUID(ids.EntryKey{FeedID: j.f.Due.FeedID, NativeID: u})
			switch take, err := idx.take(uid); {
			case err != nil:
				j.fatal = err
				return nil
			case !take:
				j.sc.Known++
				continue
			}
			if !sameSite(u, source) {
				j.reject(u, ReasonOtherSite, "the article is on another site than the list")
				continue
			}
			if r, ok := before[uid]; ok && r.ConfigHash == config && now.Sub(r.At) < RejectedFor {
				j.sc.RejectedBefore++
				continue
			}
			allKnown = false
			if j.ctx.Err() != nil {
				return entries // a signal: the rest waits for the next run
			}
			rejected := j.sc.Rejected
			if e := j.article(u, uid, rules); e != nil {
				entries = append(entries, e)
				j.sc.New++
			} else if j.sc.Rejected > rejected && remembered[j.lastReason] {
				if j.rejected == nil {
					j.rejected = map[string]catalog.Rejection{}
				}
				j.rejected[uid] = catalog.Rejection{Reason: j.lastReason, ConfigHash: config, At: now}
			}
			if j.fatal != nil {
				return entries
			}
		}
		if limit > 0 && j.sc.ArticlesFound >= limit || n >= maxPages || next.Empty() {
			return entries
		}
		if limit == 0 && allKnown {
			// Lists put the newest first: behind a page of stored articles
			// are older ones, stored too.
			j.log.Debug("every article of the page is stored: not following pagination", "url", page.URL.String())
			return entries
		}
		nexts := page.Links(next)
		if len(nexts) == 0 {
			return entries
		}
		u, err := normalize(nexts[0])
		if err != nil || visited[u] || !sameSite(u, source) || j.ctx.Err() != nil {
			return entries
		}
		visited[u] = true
		_, resp, ok := j.fetchPage(u, ndjson.PageList, "")
		if !ok {
			return entries
		}
		if page, err = extract.NewPage(resp.Body, resp.Header.Get("Content-Type"), resp.URL); err != nil {
			j.reject(u, ReasonNotHTML, err.Error())
			return entries
		}
	}
}

// article fetches and reads one article of a list.
func (j *job) article(u, uid string, rules *extract.Rules) *ndjson.Entry {
	rec, resp, ok := j.fetchPage(u, ndjson.PageArticle, uid)
	if !ok {
		return nil
	}
	page, err := extract.NewPage(resp.Body, resp.Header.Get("Content-Type"), resp.URL)
	if err != nil {
		j.reject(u, ReasonNotHTML, strings.TrimPrefix(err.Error(), "extract: "))
		return nil
	}
	final, err := normalize(resp.URL)
	if err != nil {
		final = u
	}
	return j.entry(page.Article(rules), u, final, rec.FetchID)
}

// canonical returns the canonical URL a page declares, normalized, if it is
// on the site of the page (a page naming another site's URL as its own is
// wrong more often than not); else "".
func (j *job) canonical(declared, pageURL string) string {
	c, err := normalize(declared)
	if declared == "" || err != nil || !sameSite(c, pageURL) {
		return ""
	}
	return c
}

// entry validates an article (docs/design.md#scraping) and makes it an entry: nil,
// with the rejection recorded, when it is not valid. native is the
// article's identity (its URL as the list links it, or a direct page's
// canonical URL); pageURL the page's final URL.
func (j *job) entry(art extract.Article, native, pageURL, fetchID string) *ndjson.Entry {
	now := j.s.cfg.Clock.Now()
	title := art.Title
	switch {
	case title == "":
		j.reject(native, ReasonMissingTitle, "the page has no title (article_config.title_selector)")
		return nil
	case utf8.RuneCountInString(title) > MaxTitleRunes:
		j.reject(native, ReasonLongTitle, fmt.Sprintf("the title is longer than %d characters: is the title selector right?", MaxTitleRunes))
		return nil
	case !art.Published.IsZero() && art.Published.After(now.Add(FutureTolerance)):
		j.reject(native, ReasonFutureDate, fmt.Sprintf("published %s, in the future", art.Published.Format(time.RFC3339)))
		return nil
	case !art.Published.IsZero() && art.Published.Before(MinPublished):
		j.reject(native, ReasonTooOld, fmt.Sprintf("published %s, before %s", art.Published.Format(time.RFC3339), MinPublished.Format(time.DateOnly)))
		return nil
	}
	if art.DateErr != nil {
		j.log.Warn("cannot read the publication date", "url", pageURL, "date", art.DateText, "error", art.DateErr)
	}
	if art.Text == "" {
		j.log.Warn("the article has no content (article_config.content_selector)", "url", pageURL)
	}
	link := cmp.Or(j.canonical(art.Canonical, pageURL), pageURL)
	e := &ndjson.Entry{
		Header:        ndjson.Head(ndjson.TypeEntry),
		FeedID:        j.f.Due.FeedID,
		NativeID:      native,
		CanonicalLink: link,
		Title:         title,
		Summary:       art.Summary,
		Content:       art.Content,
		Authors:       authors(art.Authors),
		Categories:    ndjson.NonNil(art.Tags),
		Enclosures:    images(nil, art.Images),
		Published:     ndjson.At(art.Published),
		RawRef:        ndjson.RawRef{FetchID: fetchID},
	}
	// A scraped article's identity is its URL (docs/design.md#identity), the
	// same one whatever the page says of itself later.
	e.EntryUID = ids.EntryUID(ids.EntryKey{FeedID: e.FeedID, NativeID: native})
	e.ContentHash = ids.ContentHash(e.Title, e.Summary, e.Content, links(e))
	if d := extract.Keywords(e.Title, art.Text); d != nil {
		e.Derivations = []ndjson.Derivation{*d}
	}
	return e
}

// fulltext completes a new entry of a feed with the text of its page. It
// returns the completed entry, or nil when the entry goes on as it came
// (stored already, or not new).
func (j *job) fulltext(e *ndjson.Entry) *ndjson.Entry {
	j.sc.ArticlesFound++
	switch take, err := j.s.index(e.FeedID).take(e.EntryUID); {
	case err != nil:
		j.fatal = err
		return nil
	case !take:
		j.sc.Known++ // stored already: a steady feed costs no page fetches
		return nil
	}
	out := *e
	text := extract.HTMLText(cmp.Or(e.Content, e.Summary))
	defer func() {
		if d := extract.Keywords(out.Title, text); d != nil {
			out.Derivations = append(slices.Clone(out.Derivations), *d)
		}
	}()
	link, err := normalize(e.CanonicalLink)
	if err != nil {
		j.reject(e.CanonicalLink, ReasonInvalidURL, "the entry has no http(s) link")
		return &out
	}
	if j.ctx.Err() != nil {
		return &out
	}
	_, rules, err := j.config()
	if err != nil {
		j.log.Warn("the scrape configuration is invalid: reading the page with readability", "error", err)
		rules, _ = extract.CompileRules(nil)
	}
	_, resp, ok := j.fetchPage(link, ndjson.PageFulltext, e.EntryUID)
	if !ok {
		return &out
	}
	page, err := extract.NewPage(resp.Body, resp.Header.Get("Content-Type"), resp.URL)
	if err != nil {
		j.reject(link, ReasonNotHTML, strings.TrimPrefix(err.Error(), "extract: "))
		return &out
	}
	art := page.Article(rules)
	if art.Text == "" {
		j.reject(link, ReasonNoContent, "no readable text on the page ("+art.Extractor+")")
		return &out
	}
	j.sc.New++
	text = art.Text
	// The feed's own summary stays; the content hash stays that of the
	// entry as the feed gave it, so that its next fetch is known.
	out.Content = art.Content
	if out.Summary == "" {
		out.Summary = art.Summary
	}
	if len(out.Authors) == 0 {
		out.Authors = authors(art.Authors)
	}
	cats := slices.Clone(out.Categories)
	for _, t := range art.Tags {
		if !slices.Contains(cats, t) {
			cats = append(cats, t)
		}
	}
	out.Categories = ndjson.NonNil(cats)
	if c := j.canonical(art.Canonical, link); c != "" {
		out.CanonicalLink = c
	}
	out.Enclosures = images(out.Enclosures, art.Images)
	return &out
}

// fetchPage fetches a page for the source, politely: robots.txt first,
// then the shared per-host limiter. The page is stored in the raw store and
// its fetch record, marked with page, kept for the store. ok is false when
// there is no page to read (the rejection is recorded).
func (j *job) fetchPage(rawURL, role, entryUID string) (_ *ndjson.Fetch, _ *httpx.Response, ok bool) {
	cfg := j.s.cfg
	if j.ctx.Err() != nil {
		return nil, nil, false
	}
	client := j.client()
	allowed, err := client.RobotsAllowed(j.ctx, rawURL, cfg.Limiter)
	if j.ctx.Err() != nil {
		return nil, nil, false
	}
	if err != nil || !allowed {
		j.reject(rawURL, ReasonRobots, "robots.txt disallows fetching it")
		return nil, nil, false
	}
	release, err := cfg.Limiter.Acquire(j.ctx, httpx.HostKey(rawURL))
	if err != nil {
		return nil, nil, false // a signal
	}
	at := cfg.Clock.Now()
	id, err := ids.FetchID(at, cfg.Rand)
	if err != nil {
		release()
		j.fatal = err
		return nil, nil, false
	}
	// A page fetch in flight finishes even after a signal, and is stored.
	req := j.request(rawURL)
	req.Limiter, req.Release = cfg.Limiter, release // a redirect to another host waits for a turn there
	r := client.Get(context.WithoutCancel(j.ctx), req)
	release()
	rec := &ndjson.Fetch{
		Header:          ndjson.Head(ndjson.TypeFetch),
		FetchID:         id,
		Due:             pageDue(j.f.Due, rawURL),
		RequestedURL:    rawURL,
		URL:             r.URL,
		Redirects:       ndjson.NonNil(r.Redirects),
		FetchedAt:       ndjson.At(at),
		DurationMS:      r.Duration.Milliseconds(),
		HTTPStatus:      r.Status,
		RequestHeaders:  httpx.Flatten(r.RequestHeader),
		ResponseHeaders: httpx.Flatten(r.Header),
		ContentType:     r.Header.Get("Content-Type"),
		Truncated:       r.Truncated,
		Error:           r.Err,
		Page:            &ndjson.Page{Role: role, SourceFetchID: j.f.FetchID, EntryUID: entryUID},
	}
	if r.HasRetryAfter {
		rec.RetryAfterSec = int((r.RetryAfter + time.Second - 1) / time.Second)
	}
	if r.Status != 0 && !r.NotModified {
		key, sum, err := cfg.Store.PutRaw(at, r.Body)
		if err != nil {
			j.fatal = err
			return nil, nil, false
		}
		rec.BodyRef = &ndjson.BlobRef{Storage: storedir.RawStorage, Key: key}
		rec.BodySHA256 = sum
		rec.ContentLength = int64(len(r.Body))
	}
	j.pages = append(j.pages, rec)
	j.sc.PagesFetched++
	j.log.Debug("fetched a page", "url", rawURL, "role", role, "page_fetch_id", id, "status", r.Status, "elapsed_ms", rec.DurationMS)
	if r.Err != nil && r.Err.Code != "body_too_large" {
		j.reject(rawURL, ReasonFetchFailed, r.Err.Code+": "+r.Err.Message)
		return nil, nil, false
	}
	return rec, r, true
}

// client is the HTTP client of the source's pages: one that may reach
// private addresses when its subscription allows them (the store's
// subscription says so, not the record).
func (j *job) client() *httpx.Client {
	if j.s.access[j.f.Due.FeedID].AllowPrivate {
		return j.s.cfg.Client.Private()
	}
	return j.s.cfg.Client
}

// request is the GET of a page: as a browser asks for a page, with the
// subscription's own User-Agent, and its headers and credentials when the
// page is on the host of the subscription's URL (never elsewhere).
func (j *job) request(rawURL string) httpx.Request {
	req := httpx.Request{URL: rawURL, Header: http.Header{"Accept": {htmlAccept}}}
	acc, ok := j.s.access[j.f.Due.FeedID]
	if !ok {
		acc = j.f.Due.Access // redacted secrets are useless, but the rest holds
		acc.Auth, acc.AllowPrivate = nil, false
	}
	req.UserAgent = acc.UserAgent
	if httpx.HostKey(rawURL) == httpx.HostKey(j.f.Due.URL) {
		for k, v := range acc.Headers {
			if v != "(redacted)" && !strings.EqualFold(k, "Accept") {
				req.Header.Set(k, v)
			}
		}
		if acc.Auth != nil {
			req.Auth = &httpx.BasicAuth{Username: acc.Auth.Username, Password: acc.Auth.Password}
		}
	}
	return req
}

// persist appends the fetch records of the pages to their day files,
// synced, before the entries that point at them go on.
func (j *job) persist() error {
	if err := j.s.cfg.Store.AppendFetches(j.pages, j.s.cfg.Catalog.FetchIndexer(context.Background())); err != nil {
		return err
	}
	return j.s.cfg.Catalog.PutRejections(j.s.catCtx, j.f.Due.FeedID, j.rejected)
}

// pageDue is the due record a page's fetch record answers: the source's,
// for the page's URL, as a website (so that feed-parse leaves the record
// alone in a replay), without the source's validators and scraper.
func pageDue(src ndjson.Due, rawURL string) ndjson.Due {
	d := src
	d.URL = rawURL
	d.SourceType = ndjson.SourceWebsite
	d.Validators = ndjson.Validators{}
	d.ItemLimit = 0
	d.Scrape = nil
	d.Last = ndjson.LastFetch{}
	return d
}

// tracking removes the parameters that only feed a publisher's analytics,
// as feed-parse does, so that an article linked with a campaign tag today
// and without one tomorrow is one article.
var tracking = urlnorm.NewTracking(urlnorm.DefaultTrackingParams)

// normalize is the form of an article's URL: normalized (urlnorm), without
// tracking parameters.
func normalize(raw string) (string, error) {
	u, err := urlnorm.Normalize(raw)
	if err != nil {
		return "", err
	}
	return tracking.Strip(u), nil
}

// sameSite reports whether two URLs are on one site: the same registrable
// domain (www.example.org and blog.example.org are), or the same host for
// addresses and local names.
func sameSite(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil {
		return false
	}
	ha, hb := strings.ToLower(ua.Hostname()), strings.ToLower(ub.Hostname())
	if ha == hb {
		return true
	}
	da, err1 := publicsuffix.EffectiveTLDPlusOne(ha)
	db, err2 := publicsuffix.EffectiveTLDPlusOne(hb)
	return err1 == nil && err2 == nil && da == db
}

func links(e *ndjson.Entry) []string {
	l := []string{e.CanonicalLink}
	for _, enc := range e.Enclosures {
		l = append(l, enc.URL)
	}
	return l
}

func authors(names []string) []ndjson.Author {
	out := []ndjson.Author{}
	for _, n := range names {
		out = append(out, ndjson.Author{Name: n})
	}
	return out
}

// imageTypes are the media types of image file names; a table of its own
// rather than mime.TypeByExtension, which the system's tables can change.
var imageTypes = map[string]string{
	".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".gif": "image/gif",
	".webp": "image/webp", ".avif": "image/avif", ".svg": "image/svg+xml",
}

// images adds image URLs to enclosures, each once, typed by their file
// name's extension ("image/*" when it says nothing).
func images(encs []ndjson.Enclosure, urls []string) []ndjson.Enclosure {
	out := slices.Clone(encs)
	if out == nil {
		out = []ndjson.Enclosure{}
	}
	for _, u := range urls {
		if slices.ContainsFunc(out, func(e ndjson.Enclosure) bool { return e.URL == u }) {
			continue
		}
		typ := "image/*"
		if pu, err := url.Parse(u); err == nil {
			typ = cmp.Or(imageTypes[strings.ToLower(path.Ext(pu.Path))], typ)
		}
		out = append(out, ndjson.Enclosure{URL: u, Type: typ})
	}
	return out
}
