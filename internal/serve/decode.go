package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// FeedSpec is the body of POST /feeds: what feed-sub add takes.
type FeedSpec struct {
	URL         string               `json:"url"`
	Discover    bool                 `json:"discover"` // url is a page: subscribe to the best feed it offers
	Name        string               `json:"name"`
	Labels      []string             `json:"labels"`
	Type        string               `json:"type"`
	IntervalSec int                  `json:"interval_sec"`
	Cron        string               `json:"cron"`
	Fulltext    bool                 `json:"fulltext"`
	UserAgent   string               `json:"user_agent"`
	Headers     []string             `json:"headers"`
	BasicAuth   string               `json:"basic_auth"`
	Scrape      *ndjson.ScrapeConfig `json:"scrape"`
	// AllowPrivate lets the feed be on a private address: only where
	// feed-serve runs with --allow-private.
	AllowPrivate bool `json:"allow_private"`
	// Media are the feed's media settings (feed-sub add --media).
	Media *ndjson.MediaSettings `json:"media"`
	// Push is the push mode (off, preferred, only); Backfill walks the
	// feed's archive (docs/design.md#push, #backfill).
	Push     string `json:"push"`
	Backfill bool   `json:"backfill"`
}

// FeedPatch is the body of PATCH /feeds/{id}: what feed-sub set, enable,
// disable, pause and resume change. An absent member is left as it is.
type FeedPatch struct {
	Name           *string   `json:"name"`
	Labels         *[]string `json:"labels"`
	AddLabels      []string  `json:"add_labels"`
	RmLabels       []string  `json:"rm_labels"`
	Type           *string   `json:"type"`
	Fulltext       *bool     `json:"fulltext"`
	UserAgent      *string   `json:"user_agent"`
	Headers        *[]string `json:"headers"`
	BasicAuth      *string   `json:"basic_auth"`
	AllowPrivate   *bool     `json:"allow_private"`
	IntervalSec    *int      `json:"interval_sec"`
	MinIntervalSec *int      `json:"min_interval_sec"`
	MaxIntervalSec *int      `json:"max_interval_sec"`
	Cron           *string   `json:"cron"`
	// Scrape replaces the scraper configuration; null removes it.
	Scrape json.RawMessage `json:"scrape"`
	// Media replaces the media settings (feed-sub set --media); null turns
	// media off.
	Media json.RawMessage `json:"media"`
	// Disabled disables (true) or enables (false) the feed.
	Disabled *bool `json:"disabled"`
	// PausedUntil pauses the feed until a time; null resumes it.
	PausedUntil json.RawMessage `json:"paused_until"`
	// Push and Backfill set the push mode and the archive walk;
	// NewSecret gives a webhook source a new secret (in the answer's
	// notes, once).
	Push      *string `json:"push"`
	Backfill  *bool   `json:"backfill"`
	NewSecret bool    `json:"new_secret"`
}

// errBody is a request body the API cannot take; its Field names the
// member at fault.
type errBody struct {
	Field, Msg string
}

func (e *errBody) Error() string { return e.Msg }

// decodeBody reads a JSON object into v (a pointer to a struct): one
// object, members the struct knows, of the types it says. Its errors say
// which member is wrong and what it takes.
func decodeBody(r io.Reader, v any) error {
	b, err := io.ReadAll(r)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &errBody{Msg: fmt.Sprintf("the body is over %d bytes", tooBig.Limit)}
	}
	if err != nil {
		return &errBody{Msg: "the body could not be read: " + err.Error()}
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return &errBody{Msg: "the body is empty: send a JSON object (Content-Type: application/json)"}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	if err == nil {
		if _, e := dec.Token(); !errors.Is(e, io.EOF) {
			return &errBody{Msg: "the body has more after its JSON object: send one object"}
		}
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return &errBody{Msg: fmt.Sprintf("the body is not JSON: %v (at byte %d)", syn, syn.Offset)}
	case errors.As(err, &typ):
		if typ.Field == "" {
			return &errBody{Msg: "the body must be a JSON object, not " + typ.Value}
		}
		return &errBody{Field: typ.Field, Msg: fmt.Sprintf("member %q must be %s, not %s", typ.Field, jsonKind(typ.Type), typ.Value)}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &errBody{Field: name, Msg: fmt.Sprintf("unknown member %q: the body takes %s", name, strings.Join(members(v), ", "))}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &errBody{Msg: "the body is not JSON: it ends too soon"}
	}
	return &errBody{Msg: "the body is not a JSON object this takes: " + err.Error()}
}

// members are the JSON names of the members of the struct v points to.
func members(v any) []string {
	t := reflect.TypeOf(v).Elem()
	var names []string
	for i := range t.NumField() {
		if n, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); n != "" && n != "-" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// jsonKind says what JSON value a Go type takes.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "a whole number"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a JSON value"
		}
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(jsonKind(t.Elem()), "a "), "an ") + "s"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

// pausedUntil reads the paused_until member: a time (RFC 3339), or null to
// resume; set is false when it is absent.
func (p *FeedPatch) pausedUntil() (until time.Time, set bool, err error) {
	if p.PausedUntil == nil {
		return time.Time{}, false, nil
	}
	if string(bytes.TrimSpace(p.PausedUntil)) == "null" {
		return time.Time{}, true, nil
	}
	var s string
	if json.Unmarshal(p.PausedUntil, &s) != nil {
		return time.Time{}, true, &errBody{Field: "paused_until", Msg: `member "paused_until" must be a time such as "2026-12-01T08:00:00Z", or null to resume`}
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, true, &errBody{Field: "paused_until", Msg: fmt.Sprintf(`member "paused_until" is %q: it must be a time such as "2026-12-01T08:00:00Z" (RFC 3339), or null to resume`, s)}
	}
	return t, true, nil
}

// scrape reads the scrape member: a scraper configuration, or null to
// remove it; set is false when it is absent.
func (p *FeedPatch) scrape() (c *ndjson.ScrapeConfig, set bool, err error) {
	if p.Scrape == nil {
		return nil, false, nil
	}
	if string(bytes.TrimSpace(p.Scrape)) == "null" {
		return nil, true, nil
	}
	c = &ndjson.ScrapeConfig{}
	dec := json.NewDecoder(bytes.NewReader(p.Scrape))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return nil, true, &errBody{Field: "scrape", Msg: `member "scrape" must be a scraper configuration (pkg/ndjson, "scrape configuration"), or null to remove it: ` + err.Error()}
	}
	return c, true, nil
}

// media reads the media member: set says it is there; nil settings turn
// media off.
func (p *FeedPatch) media() (m *ndjson.MediaSettings, set bool, err error) {
	if p.Media == nil {
		return nil, false, nil
	}
	if string(bytes.TrimSpace(p.Media)) == "null" {
		return nil, true, nil
	}
	m = &ndjson.MediaSettings{}
	dec := json.NewDecoder(bytes.NewReader(p.Media))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		return nil, true, &errBody{Field: "media", Msg: `member "media" must be media settings {"types": ["audio/*"], "max_bytes": 0, "images": false}, or null to turn media off: ` + err.Error()}
	}
	return m, true, nil
}
