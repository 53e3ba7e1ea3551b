package sub

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/extract"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/media"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Changes are the settings `feed-sub set` changes: those of `feed-sub add`
// (Spec) and the schedule's overrides. A nil field (or an empty AddLabels,
// RmLabels) is left as it is; an empty value clears a setting.
type Changes struct {
	Overrides
	Name      *string
	Labels    *[]string // replaces the labels; AddLabels and RmLabels then apply
	AddLabels []string
	RmLabels  []string
	Type      *string // "" or auto: detected from content
	Fulltext  *bool
	UserAgent *string
	Headers   *[]string // replaces the extra headers ("Name: value"); empty strings are dropped
	BasicAuth *string   // "user:password", "" for none
	// AllowPrivate lets the feed be fetched from private addresses, or
	// no longer.
	AllowPrivate *bool
	// Scrape makes the new scraper configuration from the current one (nil
	// for none); it returns nil for none.
	Scrape func(cur *ndjson.ScrapeConfig) *ndjson.ScrapeConfig
	// Media makes the new media settings from the current ones (nil for
	// none); nil or settings that ask for nothing turn media off.
	Media func(cur *ndjson.MediaSettings) *ndjson.MediaSettings
	// Sched are the scheduler's parameters, for a feed the change makes
	// due: one whose private address was refused, allowed it now.
	Sched sched.Params
	// Push sets the push mode (off, preferred, only); Backfill the
	// archive walk; NewSecret gives a webhook source a new secret
	// (push.go).
	Push      *string
	Backfill  *bool
	NewSecret bool
}

func (c Changes) empty() bool {
	o := c.Overrides
	return o.Interval == nil && o.Min == nil && o.Max == nil && o.Cron == nil &&
		c.Name == nil && c.Labels == nil && len(c.AddLabels) == 0 && len(c.RmLabels) == 0 && c.Type == nil &&
		c.Fulltext == nil && c.UserAgent == nil && c.Headers == nil && c.BasicAuth == nil && c.Scrape == nil && c.AllowPrivate == nil &&
		c.Media == nil && c.Push == nil && c.Backfill == nil && !c.NewSecret
}

// Set changes the settings of the subscriptions refs name, in one atomic
// rewrite: the settings are checked as `feed-sub add` checks them, and if
// one feed refuses a change, no feed changes. It reports what changed, one
// line per feed, credentials redacted. Schedule changes apply from the
// feed's next decision (its next fetch); a refetch applies them at once.
func Set(cfg Config, refs []string, c Changes) error {
	cfg.defaults()
	if c.empty() {
		return fmt.Errorf("%w: nothing to set: give a setting to change (feed-sub set --help lists them)", ErrInvalid)
	}
	o := c.Overrides
	for _, d := range []struct {
		name string
		v    *time.Duration
	}{{"min interval", o.Min}, {"max interval", o.Max}} {
		if d.v != nil && (*d.v < 0 || *d.v > 365*24*time.Hour) {
			return fmt.Errorf("%w: %s %s: want 0 (none) to 365 days", ErrInvalid, d.name, *d.v)
		}
	}
	var notes []string
	note := func(s string) {
		if !slices.Contains(notes, s) {
			notes = append(notes, s)
		}
	}
	noteGlobalClamps(o, note)
	err := editEach(cfg, refs, func(s *ndjson.Subscription) (string, error) {
		old := *s
		spec, err := specOf(old)
		if err != nil {
			return "", err
		}
		c.apply(&spec)
		// The settings add takes go through add's checks and cleaning.
		n, err := newSubscription(spec, old.CreatedAt.Time, note)
		if err != nil {
			return "", fmt.Errorf("%s: %w", old.URL, err)
		}
		s.Name, s.Labels, s.SourceType, s.Fulltext, s.Scrape, s.Access = n.Name, n.Labels, n.SourceType, n.Fulltext, n.Scrape, n.Access
		s.Media = n.Media
		s.IntervalSec, s.Cron = n.IntervalSec, n.Cron
		if o.Min != nil {
			s.MinIntervalSec = int(*o.Min / time.Second)
		}
		if o.Max != nil {
			s.MaxIntervalSec = int(*o.Max / time.Second)
		}
		if err := checkClamps(*s, o); err != nil {
			return "", fmt.Errorf("%s: %w", old.URL, err)
		}
		if err := c.applyPush(s); err != nil {
			return "", fmt.Errorf("%s: %w", old.URL, err)
		}
		return describeChanges(old, *s), nil
	})
	if err == nil {
		for _, n := range notes {
			fmt.Fprintf(cfg.Msg, "feed-sub: note: %s\n", n)
		}
	}
	if err == nil && c.AllowPrivate != nil && *c.AllowPrivate {
		err = refetchRefused(cfg, refs, c.Sched)
	}
	if err == nil && c.NewSecret {
		err = sayNewSecrets(cfg, refs)
	}
	return err
}

// refetchRefused makes due now the feeds refs name whose address was
// refused (a private one), now that they are allowed it: not after the
// interval the refusal left them.
func refetchRefused(cfg Config, refs []string, p sched.Params) error {
	now := cfg.Now()
	rnd := rand.New(rand.NewPCG(uint64(now.UnixNano()), 2))
	var r report
	err := changeStates(cfg, refs, func(s ndjson.Subscription, fs *catalog.FeedState) bool {
		if fs.Sched == nil || fs.Sched.Reason != sched.ReasonRefused {
			return false
		}
		if d := nudge(cfg, s, fs, fs.SchedState(), p, now, rnd); d.Kind == sched.FetchNow {
			r.feed(true, "due now: %s (its address was refused; it is allowed now)", s.URL)
		}
		return true
	})
	if err == nil {
		r.write(cfg, nil)
	}
	return err
}

// checkClamps refuses a min interval above the max interval of s, the
// subscription as set would save it: the one given now against the one it
// has (set before) too, which the scheduler would quietly raise to the min.
func checkClamps(s ndjson.Subscription, o Overrides) error {
	lo, hi := time.Duration(s.MinIntervalSec)*time.Second, time.Duration(s.MaxIntervalSec)*time.Second
	if lo == 0 || hi == 0 || hi >= lo {
		return nil
	}
	switch {
	case o.Max == nil:
		return fmt.Errorf("%w: min interval %s is above the max interval %s the feed has already (give --max-interval too, or 0 to clear it)", ErrInvalid, lo, hi)
	case o.Min == nil:
		return fmt.Errorf("%w: max interval %s is below the min interval %s the feed has already (give --min-interval too, or 0 to clear it)", ErrInvalid, hi, lo)
	}
	return fmt.Errorf("%w: max interval %s is below min interval %s", ErrInvalid, hi, lo)
}

// noteGlobalClamps says when a feed's min or max interval lies outside the
// scheduler's own clamps (their defaults, 5m and 24h):
// the value is kept, as it counts under other global clamps, but it cannot
// widen them, and ls showing it must not suggest it does.
func noteGlobalClamps(o Overrides, note func(string)) {
	global := sched.Defaults()
	for _, d := range []struct {
		name string
		v    *time.Duration
	}{{"min interval", o.Min}, {"max interval", o.Max}} {
		switch {
		case d.v == nil || *d.v == 0:
		case *d.v < global.Min:
			note(fmt.Sprintf("%s %s is below the scheduler's min interval (%s by default), which still holds: a feed's clamps only narrow the scheduler's", d.name, *d.v, global.Min))
		case *d.v > global.Max:
			note(fmt.Sprintf("%s %s is above the scheduler's max interval (%s by default), which still holds: a feed's clamps only narrow the scheduler's", d.name, *d.v, global.Max))
		}
	}
}

// specOf is the Spec that makes s, so that a change goes through
// newSubscription as a new subscription does.
func specOf(s ndjson.Subscription) (Spec, error) {
	spec := Spec{
		URL: s.URL, Name: s.Name, Labels: slices.Clone(s.Labels), Type: s.SourceType,
		Interval: time.Duration(s.IntervalSec) * time.Second, Cron: s.Cron,
		UserAgent: s.UserAgent, Fulltext: s.Fulltext, AllowPrivate: s.AllowPrivate,
	}
	if s.Media != nil {
		m := *s.Media
		m.Types = slices.Clone(m.Types)
		spec.Media = &m
	}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		spec.Headers = append(spec.Headers, k+": "+s.Headers[k])
	}
	if s.Auth != nil {
		spec.BasicAuth = s.Auth.Username + ":" + s.Auth.Password
	}
	if len(s.Scrape) > 0 {
		conf, err := extract.ParseConfig(s.Scrape, false)
		if err != nil {
			return spec, fmt.Errorf("%s: its scraper configuration: %w", s.URL, err)
		}
		spec.Scrape = conf
	}
	return spec, nil
}

// apply makes the changes to spec.
func (c Changes) apply(spec *Spec) {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&spec.Name, c.Name)
	set(&spec.Type, c.Type)
	set(&spec.UserAgent, c.UserAgent)
	set(&spec.BasicAuth, c.BasicAuth)
	set(&spec.Cron, c.Cron)
	if c.Interval != nil {
		spec.Interval = *c.Interval
	}
	if c.Fulltext != nil {
		spec.Fulltext = *c.Fulltext
	}
	if c.AllowPrivate != nil {
		spec.AllowPrivate = *c.AllowPrivate
	}
	if c.Labels != nil {
		spec.Labels = slices.Clone(*c.Labels)
	}
	spec.Labels = append(spec.Labels, c.AddLabels...)
	for _, l := range c.RmLabels {
		spec.Labels = slices.DeleteFunc(spec.Labels, func(x string) bool { return strings.TrimSpace(x) == strings.TrimSpace(l) })
	}
	if c.Headers != nil {
		spec.Headers = slices.DeleteFunc(slices.Clone(*c.Headers), func(h string) bool { return strings.TrimSpace(h) == "" })
	}
	if c.Scrape != nil {
		spec.Scrape = c.Scrape(spec.Scrape)
	}
	if c.Media != nil {
		spec.Media = c.Media(spec.Media)
	}
}

// describeChanges says what differs from old to s, for a person: secrets
// redacted as ls --json redacts them. "" if nothing does.
func describeChanges(old, s ndjson.Subscription) string {
	var out []string
	diff := func(what, a, b string) {
		if a != b {
			out = append(out, what+" "+a+" -> "+b)
		}
	}
	diff("name", fmt.Sprintf("%q", old.Name), fmt.Sprintf("%q", s.Name))
	diff("labels", fmt.Sprintf("%q", old.Labels), fmt.Sprintf("%q", s.Labels))
	diff("type", old.SourceType, s.SourceType)
	diff("fulltext", fmt.Sprint(old.Fulltext), fmt.Sprint(s.Fulltext))
	diff("push", cmp.Or(old.Push, ndjson.PushPreferred), cmp.Or(s.Push, ndjson.PushPreferred))
	diff("backfill", fmt.Sprint(old.Backfill), fmt.Sprint(s.Backfill))
	if old.WebhookSecret != s.WebhookSecret {
		out = append(out, "webhook secret changed")
	}
	diff("allow private", fmt.Sprint(old.AllowPrivate), fmt.Sprint(s.AllowPrivate))
	diff("media", mediaText(old.Media), mediaText(s.Media))
	diff("interval", seconds(old.IntervalSec), seconds(s.IntervalSec))
	diff("min interval", seconds(old.MinIntervalSec), seconds(s.MinIntervalSec))
	diff("max interval", seconds(old.MaxIntervalSec), seconds(s.MaxIntervalSec))
	diff("cron", fmt.Sprintf("%q", old.Cron), fmt.Sprintf("%q", s.Cron))
	diff("user agent", fmt.Sprintf("%q", old.UserAgent), fmt.Sprintf("%q", s.UserAgent))
	switch a, b := headers(old.Headers), headers(s.Headers); {
	case a != b:
		out = append(out, "headers "+a+" -> "+b)
	case !maps.Equal(old.Headers, s.Headers):
		out = append(out, "header values changed") // the values are redacted
	}
	switch a, b := auth(old.Auth), auth(s.Auth); {
	case a != b:
		out = append(out, "basic auth "+a+" -> "+b)
	case old.Auth != nil && old.Auth.Password != s.Auth.Password:
		out = append(out, "basic auth password changed")
	}
	switch a, b := scrapeMembers(old.Scrape), scrapeMembers(s.Scrape); {
	case a == nil && b != nil:
		out = append(out, "scrape config none -> "+string(s.Scrape))
	case a != nil && b == nil:
		out = append(out, "scrape config removed")
	default:
		for _, k := range slices.Sorted(maps.Keys(b)) {
			diff("scrape "+k, a[k], b[k])
		}
	}
	return strings.Join(out, ", ")
}

// mediaText says what media settings take.
func mediaText(m *ndjson.MediaSettings) string {
	if !m.On() {
		return "none"
	}
	var parts []string
	if len(m.Types) > 0 {
		parts = append(parts, strings.Join(m.Types, ","))
	}
	if m.Images {
		parts = append(parts, "images")
	}
	if m.MaxBytes > 0 {
		parts = append(parts, "up to "+media.FormatSize(m.MaxBytes)+" a file")
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func seconds(n int) string {
	if n == 0 {
		return "none"
	}
	return (time.Duration(n) * time.Second).String()
}

// headers shows extra headers with their values redacted (but those of
// standard headers such as Accept).
func headers(h map[string]string) string {
	if len(h) == 0 {
		return "none"
	}
	r := httpx.RedactHeaderMap(h)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(r)) {
		out = append(out, fmt.Sprintf("%q", k+": "+r[k]))
	}
	return "[" + strings.Join(out, " ") + "]"
}

func auth(a *ndjson.Auth) string {
	if a == nil {
		return "none"
	}
	return fmt.Sprintf("user %q, password (redacted)", a.Username)
}

// scrapeMembers flattens a scraper configuration to its members, such as
// "list_config.article_selector", each as JSON; nil for none.
func scrapeMembers(raw json.RawMessage) map[string]string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return nil
	}
	out := map[string]string{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok {
				walk(prefix+k+".", sub)
				continue
			}
			b, _ := json.Marshal(v)
			out[prefix+k] = string(b)
		}
	}
	walk("", m)
	return out
}

// editEach applies change to each subscription that refs name, in one
// atomic rewrite: if any ref matches nothing or any change fails, nothing
// changes. Each change says what it did ("" for nothing), reported per
// feed as "feed-sub: changed <url>: <what>", and for more than one feed,
// how many changed.
func editEach(cfg Config, refs []string, change func(*ndjson.Subscription) (string, error)) error {
	cfg.defaults()
	var r report
	err := cfg.editSubscriptions(func(subs []ndjson.Subscription) ([]ndjson.Subscription, error) {
		r = report{}
		picked, err := pick(subs, refs)
		if err != nil {
			return nil, err
		}
		for _, i := range picked {
			url := subs[i].URL
			what, err := change(&subs[i])
			if err != nil {
				return nil, err
			}
			if what == "" {
				r.feed(false, "unchanged %s: it has these settings already", url)
			} else {
				r.feed(true, "changed %s: %s", url, what)
			}
		}
		return subs, nil
	})
	if err != nil {
		return err
	}
	r.write(cfg, counted("changed", "they have these settings already"))
	return nil
}
