package sub

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/extract"
	"github.com/feedpipe/feedpipe/internal/opml"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/plural"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// MaxImportBytes caps the size of a file to import.
const MaxImportBytes = 64 << 20

// ImportResult counts what an import did.
type ImportResult struct {
	Format     string // opml, json or list
	Found      int    // feeds in the file
	Added      int
	Duplicates int // already subscribed, or repeated in the file
	Invalid    int // not usable, each reported
}

// candidate is one feed found in an import file.
type candidate struct {
	spec  Spec
	where string // "line 12", "$[3]": for messages
	err   error  // why it cannot be used, found while reading the file
	// restore sets what a subscription record gives beyond Spec (its
	// clamps, pause, disabled flag, creation time); nil for other formats.
	restore func(*ndjson.Subscription)
}

// Import subscribes to every feed in r: an OPML document (1.0 to 2.0,
// nested folders becoming labels), a JSON list ([{"url", "label",
// "cron"}], docs/design.md#subscriptions), or a plain list of URLs, one per
// line. source names r in messages; labels are added to every feed. It is
// ReadImport, then ImportFile.
func Import(cfg Config, r io.Reader, source string, labels []string) (ImportResult, error) {
	f, err := ReadImport(r, source)
	if err != nil {
		return ImportResult{Format: f.formatName()}, err
	}
	return ImportFrom(cfg, f, labels)
}

// ImportSource is a file to import, read and recognised (ReadImport).
type ImportSource struct {
	source   string
	format   string
	cands    []candidate
	warnings []string
}

func (f *ImportSource) formatName() string {
	if f == nil {
		return ""
	}
	return f.format
}

// MaxInvalidImport is how many entries of a file that cannot be used an
// import reads before it stops, when none could be used: a file that is no
// list of feeds (a binary, a web page) is said to be one once, not line by
// line.
const MaxInvalidImport = 100

// ReadImport reads and recognises a file to import, before any store is
// opened: a file that cannot be read, or holds no feed URL, is an error
// here. source names it in messages.
func ReadImport(r io.Reader, source string) (*ImportSource, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxImportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", source, err)
	}
	if len(data) > MaxImportBytes {
		return nil, fmt.Errorf("%s is over %d MiB", source, MaxImportBytes>>20)
	}
	f := &ImportSource{source: source}
	f.format, f.cands, f.warnings, err = candidates(data)
	if err != nil {
		return f, fmt.Errorf("%s: %w", source, err)
	}
	if len(f.cands) == 0 {
		return f, fmt.Errorf("%s: no feed URLs found (expected OPML, a JSON list of feeds, or one URL per line)", source)
	}
	// A file whose first entries are all unusable is not a list of feeds.
	bad := 0
	for _, c := range f.cands[:min(len(f.cands), MaxInvalidImport)] {
		if c.err == nil {
			if _, err := newSubscription(c.spec, time.Time{}, func(string) {}); err == nil {
				break
			}
		}
		bad++
	}
	if bad == MaxInvalidImport {
		return f, fmt.Errorf("%s: not a list of feeds: its first %d entries (of %d) are no feed URLs (expected OPML, a JSON list of feeds, or one URL per line)",
			source, MaxInvalidImport, len(f.cands))
	}
	return f, nil
}

// ImportFrom subscribes to every feed of f, with labels added to each.
// Feeds already subscribed are counted and skipped; a feed repeated in the
// file (one OPML outline per folder) is subscribed once with the labels of
// all. Entries that cannot be used are reported (the first
// maxFeedLines of them one by one) and skipped, and make ImportFrom return
// an error matching pipe.ErrFailed after the rest is added.
func ImportFrom(cfg Config, f *ImportSource, labels []string) (ImportResult, error) {
	cfg.defaults()
	res := ImportResult{Format: f.format, Found: len(f.cands)}
	source := f.source
	for _, w := range f.warnings {
		fmt.Fprintf(cfg.Msg, "feed-sub: warning: %s: %s\n", source, w)
	}
	now := cfg.Now()
	var fresh []ndjson.Subscription
	at := map[string]int{} // feed id -> its index in fresh
	for _, c := range f.cands {
		c.spec.Labels = append(c.spec.Labels, labels...)
		note := func(n string) { fmt.Fprintf(cfg.Msg, "feed-sub: note: %s: %s: %s\n", source, c.where, n) }
		var s ndjson.Subscription
		err := c.err
		if err == nil {
			s, err = newSubscription(c.spec.fitNames(note), now, note)
		}
		if err == nil && c.restore != nil {
			c.restore(&s)
		}
		if err == nil && s.SourceType == ndjson.SourceWebhook && s.WebhookSecret == "" {
			note("webhook source " + s.URL + " comes without its secret: feed-sub set " + s.URL + " --new-secret makes one (until then its POSTs are refused)")
		}
		if err != nil {
			res.Invalid++
			if res.Invalid <= maxFeedLines {
				fmt.Fprintf(cfg.Msg, "feed-sub: skipped %s: %s: %v\n", source, c.where, err)
			} else {
				cfg.Log.Debug("skipped", "file", source, "where", c.where, "error", err)
			}
			continue
		}
		if i, ok := at[s.FeedID]; ok {
			res.Found--
			fresh[i].Labels = cleanLabels(append(fresh[i].Labels, s.Labels...))
			continue
		}
		at[s.FeedID] = len(fresh)
		fresh = append(fresh, s)
	}
	if res.Invalid > maxFeedLines {
		fmt.Fprintf(cfg.Msg, "feed-sub: skipped %d more entries of %s that cannot be used (--log-level debug lists them)\n", res.Invalid-maxFeedLines, source)
	}
	err := cfg.editSubscriptions(func(subs []ndjson.Subscription) ([]ndjson.Subscription, error) {
		have := make(map[string]bool, len(subs)+len(fresh))
		for _, s := range subs {
			have[s.FeedID] = true
		}
		for _, s := range fresh {
			if have[s.FeedID] {
				res.Duplicates++
				continue
			}
			have[s.FeedID] = true
			subs = append(subs, s)
			res.Added++
		}
		if res.Added == 0 {
			return nil, errUnchanged
		}
		return subs, nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		return res, err
	}
	fmt.Fprintf(cfg.Msg, "feed-sub: imported %s (%s): %s found, %d added, %s skipped, %d invalid\n",
		source, res.Format, plural.Count(res.Found, "feed", "feeds"), res.Added, plural.Count(res.Duplicates, "duplicate", "duplicates"), res.Invalid)
	return res, pipe.Failures{Records: res.Invalid}.Err("entry", "entries")
}

// candidates recognises the file's format and lists the feeds in it.
func candidates(data []byte) (format string, cands []candidate, warnings []string, err error) {
	trimmed := bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	lower := bytes.ToLower(trimmed[:min(len(trimmed), 4096)])
	switch {
	case isSubscriptionRecords(trimmed):
		cands, warnings = recordCandidates(trimmed)
		return "ndjson", cands, warnings, nil
	case len(trimmed) > 0 && (trimmed[0] == '[' || trimmed[0] == '{'):
		cands, err = jsonCandidates(trimmed)
		return "json", cands, nil, err
	case bytes.Contains(lower, []byte("<opml")) || bytes.Contains(lower, []byte("<outline")) || bytes.HasPrefix(lower, []byte("<?xml")):
		res, err := opml.Parse(bytes.NewReader(data))
		if err != nil {
			return "opml", nil, nil, err
		}
		for _, o := range res.Outlines {
			where := "an outline"
			if o.Line > 0 {
				where = "line " + strconv.Itoa(o.Line)
			}
			c := candidate{spec: Spec{URL: o.URL, Name: o.Title, Labels: o.Labels, Type: o.SourceType, Fulltext: o.Fulltext}, where: where}
			// feedpipe's own attributes (opml.Namespace): its export's.
			if o.Scrape != "" {
				if c.spec.Scrape, c.err = extract.ParseConfig([]byte(o.Scrape), false); c.err != nil {
					c.err = fmt.Errorf("%w: its feedpipe:scrape: %v", ErrInvalid, c.err)
				}
			}
			cands = append(cands, c)
		}
		return "opml", cands, res.Warnings, nil
	}
	return "list", listCandidates(data), nil, nil
}

// isSubscriptionRecords reports whether data is NDJSON of subscription
// records: feed-sub export --format ndjson, feed-sub ls --json, or a
// store's subscriptions.ndjson.
func isSubscriptionRecords(data []byte) bool {
	first, _, _ := bytes.Cut(data, []byte("\n"))
	var h ndjson.Header
	return len(first) > 0 && first[0] == '{' && json.Unmarshal(first, &h) == nil &&
		(h.Type == ndjson.TypeSubscription || h.Type == ndjson.TypeSubscriptionRemoved)
}

// recordCandidates reads subscription records, one per line, with every
// setting. A secret that a listing redacted is not imported, and said not
// to be. A subscription_removed record (in a store's subscription log)
// drops the feed's earlier one: the last line of a feed wins.
func recordCandidates(data []byte) ([]candidate, []string) {
	var (
		cands    []candidate
		warnings []string
		at       = map[string]int{} // feed id -> its candidate
		gone     = map[int]bool{}
	)
	for n, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		where := "line " + strconv.Itoa(n+1)
		var h ndjson.Header
		if err := json.Unmarshal(line, &h); err != nil {
			cands = append(cands, candidate{where: where, err: fmt.Errorf("not a JSON object: %w", err)})
			continue
		}
		switch h.Type {
		case ndjson.TypeSubscriptionRemoved:
			var r ndjson.SubscriptionRemoved
			if json.Unmarshal(line, &r) == nil {
				if i, ok := at[r.FeedID]; ok {
					gone[i] = true
					delete(at, r.FeedID)
				}
			}
			continue
		case ndjson.TypeSubscription:
		default:
			warnings = append(warnings, fmt.Sprintf("%s: a %q record, not a subscription: skipped", where, h.Type))
			continue
		}
		var s ndjson.Subscription
		if err := json.Unmarshal(line, &s); err != nil {
			cands = append(cands, candidate{where: where, err: fmt.Errorf("not a subscription record: %w", err)})
			continue
		}
		if redacted(&s) {
			warnings = append(warnings, fmt.Sprintf("%s: %s: its secrets are redacted in the file and not imported (feed-sub export --format ndjson --with-secrets keeps them)", where, s.URL))
		}
		spec, err := specOf(s)
		rec := s
		c := candidate{spec: spec, where: where, err: err, restore: func(n *ndjson.Subscription) {
			n.Disabled, n.MinIntervalSec, n.MaxIntervalSec, n.PausedUntil = rec.Disabled, rec.MinIntervalSec, rec.MaxIntervalSec, rec.PausedUntil
			n.Push, n.Backfill, n.WebhookSecret = rec.Push, rec.Backfill, rec.WebhookSecret
			if !rec.CreatedAt.IsZero() {
				n.CreatedAt = rec.CreatedAt
			}
			// A feed moved permanently keeps its id, which its URL no
			// longer gives: the stored entries stay its own.
			if rec.Check() == nil {
				n.FeedID = rec.FeedID
			}
		}}
		if i, ok := at[s.FeedID]; ok && s.FeedID != "" {
			cands[i] = c // a later line of the feed wins, in its place
			continue
		}
		at[s.FeedID] = len(cands)
		cands = append(cands, c)
	}
	kept := cands[:0]
	for i, c := range cands {
		if !gone[i] {
			kept = append(kept, c)
		}
	}
	return kept, warnings
}

// redactedValue is what listings write in place of a secret.
const redactedValue = "(redacted)"

// redacted drops the secrets of s that a listing redacted, and reports
// whether there were any.
func redacted(s *ndjson.Subscription) bool {
	found := false
	if s.Auth != nil && s.Auth.Password == redactedValue {
		s.Auth, found = nil, true
	}
	for k, v := range s.Headers {
		if v == redactedValue {
			delete(s.Headers, k)
			found = true
		}
	}
	if s.WebhookSecret == redactedValue {
		s.WebhookSecret, found = "", true // feed-sub set --new-secret makes one
	}
	return found
}

// listCandidates reads one URL per line; '#' starts a comment, and words
// after the URL are labels.
func listCandidates(data []byte) []candidate {
	var cands []candidate
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), MaxImportBytes)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		cands = append(cands, candidate{spec: Spec{URL: fields[0], Labels: fields[1:]}, where: "line " + strconv.Itoa(n)})
	}
	return cands
}

// jsonFeed is one feed of a JSON import, in the spellings feed lists use.
type jsonFeed struct {
	URL      string          `json:"url"`
	XMLURL   string          `json:"xmlUrl"`
	Feed     string          `json:"feed"`
	Name     string          `json:"name"`
	Title    string          `json:"title"`
	Label    string          `json:"label"`
	Labels   []string        `json:"labels"`
	Category string          `json:"category"`
	Cron     string          `json:"cron"`
	Type     string          `json:"type"`
	Interval json.RawMessage `json:"interval"`
}

// jsonCandidates reads a JSON array of feeds (objects or URL strings), an
// object holding such an array under "feeds", "sources" or
// "subscriptions", or an object mapping category names to such arrays.
func jsonCandidates(data []byte) ([]candidate, error) {
	var top any
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	var cands []candidate
	var walk func(v any, label, where string)
	walk = func(v any, label, where string) {
		switch v := v.(type) {
		case []any:
			for i, item := range v {
				walk(item, label, fmt.Sprintf("%s[%d]", where, i))
			}
		case string:
			cands = append(cands, candidate{spec: Spec{URL: v, Labels: nonEmpty(label)}, where: where})
		case map[string]any:
			if v["url"] != nil || v["xmlUrl"] != nil || v["feed"] != nil {
				cands = append(cands, jsonCandidate(v, label, where))
				return
			}
			for _, key := range []string{"feeds", "sources", "subscriptions"} {
				if list, ok := v[key]; ok {
					walk(list, label, where+"."+key)
					return
				}
			}
			// An object of category name -> feeds, read in name order.
			for _, key := range slices.Sorted(maps.Keys(v)) {
				if list, ok := v[key].([]any); ok {
					walk(list, key, where+"."+key)
				}
			}
		}
	}
	walk(top, "", "$")
	return cands, nil
}

func jsonCandidate(obj map[string]any, label, where string) candidate {
	b, _ := json.Marshal(obj)
	var f jsonFeed
	if err := json.Unmarshal(b, &f); err != nil {
		return candidate{where: where, err: fmt.Errorf("not a feed entry: %w", err)}
	}
	spec := Spec{
		URL:    cmp.Or(strings.TrimSpace(f.URL), strings.TrimSpace(f.XMLURL), strings.TrimSpace(f.Feed)),
		Name:   cmp.Or(strings.TrimSpace(f.Name), strings.TrimSpace(f.Title)),
		Labels: append(append(nonEmpty(label), f.Labels...), nonEmpty(f.Label, f.Category)...),
		Cron:   f.Cron,
		Type:   f.Type,
	}
	if len(f.Interval) > 0 && string(f.Interval) != "null" {
		var s string
		var secs float64
		switch {
		case json.Unmarshal(f.Interval, &s) == nil:
			d, err := time.ParseDuration(s)
			if err != nil {
				return candidate{where: where, err: fmt.Errorf("interval %q is not a duration such as 15m or 2h", s)}
			}
			spec.Interval = d
		case json.Unmarshal(f.Interval, &secs) == nil:
			spec.Interval = time.Duration(secs * float64(time.Second))
		}
	}
	return candidate{spec: spec, where: where}
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
