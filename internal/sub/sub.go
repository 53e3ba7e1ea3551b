// Package sub is feed-sub: it adds, removes, lists, enables, disables,
// imports and exports the subscriptions of a store.
package sub

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/extract"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/media"
	"github.com/feedpipe/feedpipe/internal/safetext"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Polling intervals a subscription may set (docs/design.md#rules-every-policy-keeps).
const (
	MinInterval = 5 * time.Minute
	MaxInterval = 24 * time.Hour
)

// Config is everything feed-sub touches.
type Config struct {
	Store   *storedir.Store
	Catalog *catalog.Catalog // the store's catalog; nil: opened for each call
	Out     io.Writer        // data: ls and export output, ids of added feeds
	Msg     io.Writer        // messages for the person at the terminal
	Log     *slog.Logger
	// Bulk says the feeds were picked by --all, --label or --state, not
	// named: what is done to each is logged at debug, and only how many
	// were changed is said.
	Bulk bool
	Now  func() time.Time
}

func (cfg *Config) defaults() {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Msg == nil {
		cfg.Msg = io.Discard
	}
}

// catalog returns the store's catalog, and the function that lets go of
// it.
func (cfg *Config) catalog() (*catalog.Catalog, func(), error) {
	return catalog.Use(context.Background(), cfg.Catalog, cfg.Store, cfg.Log)
}

// pickInCatalog opens the store's catalog and picks the subscriptions refs
// name; done closes it (a no-op after an error).
func (cfg *Config) pickInCatalog(refs []string) (cat *catalog.Catalog, subs []ndjson.Subscription, picked []int, done func(), err error) {
	cat, done, err = cfg.catalog()
	if err != nil {
		return nil, nil, nil, func() {}, err
	}
	if subs, err = cat.Subscriptions(context.Background()); err == nil {
		picked, err = pick(subs, refs)
	}
	if err != nil {
		done()
		return nil, nil, nil, func() {}, err
	}
	return cat, subs, picked, done, nil
}

// editSubscriptions is catalog.EditSubscriptions on the store's catalog.
func (cfg *Config) editSubscriptions(edit func([]ndjson.Subscription) ([]ndjson.Subscription, error)) error {
	cat, done, err := cfg.catalog()
	if err != nil {
		return err
	}
	defer done()
	return cat.EditSubscriptions(context.Background(), edit)
}

// Spec describes a subscription to create.
type Spec struct {
	URL      string
	Name     string
	Labels   []string
	Type     string        // rss, atom, json, website; "" or auto: detected from content
	Interval time.Duration // 0: the default
	Cron     string        // a cron expression, kept for the scheduler
	// Access: a User-Agent of its own, extra headers ("Name: value"),
	// basic auth ("user:password").
	UserAgent string
	Headers   []string
	BasicAuth string
	// Scrape is the scraper configuration of a website, or of a feed's
	// pages for Fulltext; nil for none.
	Scrape *ndjson.ScrapeConfig
	// Fulltext asks feed-scrape for the text of each new entry's page.
	Fulltext bool
	// AllowPrivate lets the feed be fetched from a loopback, private or
	// link-local address (ndjson.Access.AllowPrivate).
	AllowPrivate bool
	// Media are the files of its new entries feed-media downloads; nil
	// for none.
	Media *ndjson.MediaSettings
	// Push is the push mode (off, preferred, only; "" preferred), and
	// Backfill walks the feed's archive (push.go).
	Push     string
	Backfill bool
}

// ErrInvalid marks a subscription that cannot be made: a URL that is not
// http(s), an unknown type, a negative interval.
var ErrInvalid = errors.New("invalid subscription")

var sourceTypes = []string{ndjson.SourceAuto, ndjson.SourceRSS, ndjson.SourceAtom, ndjson.SourceJSON, ndjson.SourceWebsite, ndjson.SourceWebhook}

// newSubscription validates spec and builds its subscription. The feed id
// derives from the normalized URL (docs/design.md#identity). notes receives anything
// that was adjusted.
func newSubscription(spec Spec, now time.Time, note func(string)) (ndjson.Subscription, error) {
	if spec.isWebhook() {
		return newWebhook(spec, now) // push.go
	}
	// Credentials in the URL would be written with it into records and
	// logs, and make the feed id: they become the basic auth instead.
	raw, user := urlnorm.SplitUserinfo(spec.URL)
	u, err := urlnorm.Normalize(raw)
	if err != nil {
		// urlnorm's message names the URL; its package prefix means nothing
		// to a user.
		return ndjson.Subscription{}, fmt.Errorf("%w: %s", ErrInvalid, strings.TrimPrefix(err.Error(), "urlnorm: "))
	}
	if err := spec.checkNames(); err != nil {
		return ndjson.Subscription{}, err
	}
	typ := strings.ToLower(cmp.Or(strings.TrimSpace(spec.Type), ndjson.SourceAuto))
	if !slices.Contains(sourceTypes, typ) {
		return ndjson.Subscription{}, fmt.Errorf("%w: type %q is not one of %s", ErrInvalid, spec.Type, strings.Join(sourceTypes, ", "))
	}
	interval, err := clampInterval(spec.Interval, note)
	if err != nil {
		return ndjson.Subscription{}, err
	}
	if c := strings.TrimSpace(spec.Cron); c != "" {
		if err := sched.CheckCron(c); err != nil {
			return ndjson.Subscription{}, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	access, err := spec.access()
	if err != nil {
		return ndjson.Subscription{}, err
	}
	switch {
	case user != nil && access.Auth != nil:
		note("the user and password in the URL are dropped: --basic-auth is used")
	case user != nil:
		pass, _ := user.Password()
		access.Auth = &ndjson.Auth{Username: user.Username(), Password: pass}
		note("the user and password in the URL are kept as its basic auth, not in the URL")
	}
	if typ == ndjson.SourceAuto && spec.Scrape != nil && strings.TrimSpace(spec.Scrape.DiscoveryMode) != "" {
		typ = ndjson.SourceWebsite // a discovery mode says it is a website
	}
	scrape, err := spec.scrape(typ)
	if err != nil {
		return ndjson.Subscription{}, err
	}
	mediaSettings, err := media.Settings(spec.Media)
	if err != nil {
		return ndjson.Subscription{}, fmt.Errorf("%w: %s", ErrInvalid, strings.TrimPrefix(err.Error(), media.ErrSetting.Error()+": "))
	}
	push, err := checkPush(spec.Push)
	if err != nil {
		return ndjson.Subscription{}, err
	}
	return ndjson.Subscription{
		Media:       mediaSettings,
		Push:        push,
		Backfill:    spec.Backfill && typ != ndjson.SourceWebsite,
		Scrape:      scrape,
		Fulltext:    spec.Fulltext,
		Access:      access,
		Header:      ndjson.Head(ndjson.TypeSubscription),
		FeedID:      ids.FeedID(u),
		URL:         u,
		Name:        strings.TrimSpace(spec.Name),
		Labels:      cleanLabels(spec.Labels),
		SourceType:  typ,
		IntervalSec: int(interval / time.Second),
		Cron:        strings.TrimSpace(spec.Cron),
		CreatedAt:   ndjson.At(now),
	}, nil
}

// checkNames refuses a name or label no page, app or terminal should be
// given: control characters, bidi controls, markup (safetext.CheckName).
func (spec Spec) checkNames() error {
	if err := safetext.CheckName(spec.Name); err != nil {
		return fmt.Errorf("%w: name %q: %v", ErrInvalid, spec.Name, err)
	}
	for _, l := range spec.Labels {
		if err := safetext.CheckName(l); err != nil {
			return fmt.Errorf("%w: label %q: %v", ErrInvalid, l, err)
		}
	}
	return nil
}

// fitNames drops the name and labels of spec that checkNames refuses,
// saying so with note: a file's feed is imported without them rather
// than not at all.
func (spec Spec) fitNames(note func(string)) Spec {
	if err := safetext.CheckName(spec.Name); err != nil {
		note(fmt.Sprintf("its name %q is left out: %v", spec.Name, err))
		spec.Name = ""
	}
	spec.Labels = slices.DeleteFunc(slices.Clone(spec.Labels), func(l string) bool {
		err := safetext.CheckName(l)
		if err != nil {
			note(fmt.Sprintf("its label %q is left out: %v", l, err))
		}
		return err != nil
	})
	return spec
}

// scrape checks the scraper configuration and returns it as the
// subscription keeps it.
func (spec Spec) scrape(typ string) (json.RawMessage, error) {
	if spec.Scrape == nil {
		return nil, nil
	}
	c := *spec.Scrape
	if err := extract.CheckConfig(&c); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if c.DiscoveryMode != "" && typ != ndjson.SourceWebsite {
		return nil, fmt.Errorf("%w: a discovery mode is for websites: add --type website", ErrInvalid)
	}
	b, err := ndjson.Marshal(c) // as records are written: "a > b" stays readable
	return json.RawMessage(bytes.TrimSpace(b)), err
}

func (spec Spec) access() (ndjson.Access, error) {
	a := ndjson.Access{UserAgent: strings.TrimSpace(spec.UserAgent), AllowPrivate: spec.AllowPrivate}
	for _, h := range spec.Headers {
		name, value, ok := strings.Cut(h, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(value, "\r\n") {
			return a, fmt.Errorf("%w: header %q is not \"Name: value\"", ErrInvalid, h)
		}
		if a.Headers == nil {
			a.Headers = map[string]string{}
		}
		a.Headers[http.CanonicalHeaderKey(name)] = strings.TrimSpace(value)
	}
	if spec.BasicAuth != "" {
		user, pass, ok := strings.Cut(spec.BasicAuth, ":")
		if !ok || user == "" {
			return a, fmt.Errorf("%w: --basic-auth wants user:password", ErrInvalid)
		}
		a.Auth = &ndjson.Auth{Username: user, Password: pass}
	}
	return a, nil
}

// cleanLabels trims labels and drops empty ones and repeats. A label is
// kept whole, commas and all: an OPML folder may be named "LEA, GOV, CERT".
func cleanLabels(labels []string) []string {
	out := []string{}
	for _, l := range labels {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// Check validates spec as Add does, before a store is opened: a command
// that fails it makes none.
func Check(spec Spec) error {
	_, err := newSubscription(spec, time.Time{}, func(string) {})
	return err
}

// Add subscribes to one feed. Adding a URL that is already subscribed
// changes nothing and is not an error: added is false.
func Add(cfg Config, spec Spec) (sub ndjson.Subscription, added bool, err error) {
	cfg.defaults()
	sub, err = newSubscription(spec, cfg.Now(), func(n string) { fmt.Fprintf(cfg.Msg, "feed-sub: note: %s\n", n) })
	if err != nil {
		return sub, false, err
	}
	if sub.SourceType == ndjson.SourceWebhook {
		if sub.WebhookSecret, err = NewSecret(nil); err != nil {
			return sub, false, err
		}
	}
	err = cfg.editSubscriptions(func(subs []ndjson.Subscription) ([]ndjson.Subscription, error) {
		for _, s := range subs {
			if s.URL == sub.URL || s.FeedID == sub.FeedID {
				sub = s
				return nil, errUnchanged
			}
		}
		added = true
		return append(subs, sub), nil
	})
	if errors.Is(err, errUnchanged) {
		fmt.Fprintf(cfg.Msg, "feed-sub: already subscribed to %s; its settings are unchanged (feed-sub set changes them)\n", sub.URL)
		err = nil
	} else if err == nil {
		fmt.Fprintf(cfg.Msg, "feed-sub: subscribed to %s\n", sub.URL)
		if sub.SourceType == ndjson.SourceWebhook {
			sayWebhook(cfg, sub)
		}
	}
	if err == nil {
		fmt.Fprintln(cfg.Out, sub.FeedID)
	}
	return sub, added, err
}

// errUnchanged ends an edit that has nothing to write.
var errUnchanged = errors.New("unchanged")

// Remove deletes the subscriptions refs name (ids, id prefixes or URLs).
// Their stored entries stay.
func Remove(cfg Config, refs []string) error {
	return edit(cfg, refs, verbs{done: "removed"}, func(*ndjson.Subscription) editResult { return removed })
}

// SetDisabled disables or enables the subscriptions refs name.
func SetDisabled(cfg Config, refs []string, disabled bool) error {
	v := verbs{done: "disabled", same: "%s is disabled already"}
	if !disabled {
		v = verbs{done: "enabled", same: "%s is enabled already"}
	}
	return edit(cfg, refs, v, func(s *ndjson.Subscription) editResult {
		if s.Disabled == disabled {
			return unchanged
		}
		s.Disabled = disabled
		return changed
	})
}

// editResult is what an edit did to one subscription.
type editResult int

const (
	unchanged editResult = iota
	changed
	removed // it leaves the list
)

// verbs say what edit did: done, of each feed changed ("disabled": said
// "feed-sub: disabled URL") and of how many; same, a format of the URL,
// of each feed left as it was. Nothing is said with done "": the caller
// says it.
type verbs struct{ done, same string }

// edit applies change to each subscription that refs name, in one atomic
// rewrite: if any ref matches nothing, nothing changes. Once saved, it
// says what it did to each feed and, for more than one, to how many.
func edit(cfg Config, refs []string, v verbs, change func(*ndjson.Subscription) editResult) error {
	cfg.defaults()
	var r report
	err := cfg.editSubscriptions(func(subs []ndjson.Subscription) ([]ndjson.Subscription, error) {
		r = report{}
		picked, err := pick(subs, refs)
		if err != nil {
			return nil, err
		}
		gone := map[int]bool{}
		for _, i := range picked {
			switch change(&subs[i]) {
			case removed:
				gone[i] = true
				r.feed(true, "%s %s", v.done, subs[i].URL)
			case changed:
				r.feed(true, "%s %s", v.done, subs[i].URL)
			default:
				r.feed(false, v.same, subs[i].URL)
			}
		}
		if r.changed == 0 {
			return nil, errUnchanged
		}
		if len(gone) > 0 {
			kept := subs[:0]
			for i, s := range subs {
				if !gone[i] {
					kept = append(kept, s)
				}
			}
			subs = kept
		}
		return subs, nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		return err
	}
	if v.done != "" {
		r.write(cfg, counted(v.done, "as they were already"))
	}
	return nil
}
