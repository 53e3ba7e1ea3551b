package sim

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
)

// TraceFormat documents the trace file, for feed-sim --help and docs.
const TraceFormat = `A trace is NDJSON, one record per line, in any order:

  {"type":"period","start":"2026-06-01T00:00:00Z","end":"2026-07-01T00:00:00Z"}
      the measured period: polls start at start; delays and requests are
      counted for posts and polls in [start, end). Default: from the first
      post to one day after the last. Posts before start are history: the
      first poll sees the last <window> of them.
  {"type":"feed","feed_id":"a","window":20,"ttl_minutes":60,"skip_hours":[1,2,3],
   "skip_days":["Sunday"],"etag":true,"bytes":8000,"max_age_sec":600,"no_dates":false}
      a feed and its server: window = how many items the feed shows (20); a
      post pushed out of the window before any poll saw it is missed; ttl,
      skip_hours (GMT), skip_days and max_age_sec (Cache-Control) are the
      publisher's hints; etag = the server answers 304 when nothing changed
      (else 200 with the same body); bytes = body size (10000); no_dates =
      items carry no publication time. A post for an undeclared feed
      declares it with these defaults. "shape" (optional; the generator
      writes it) is the feed's true posting rate by hour of the week,
      168 relative numbers from Sunday 00:00 UTC: the oracle-timed
      yardstick polls by it; without it the rate counts as constant.
  {"type":"post","feed_id":"a","at":"2026-06-03T07:24:00Z"}
      one item published at that time.
  {"type":"outage","feed_id":"a","from":"...","to":"...","status":503,
   "retry_after_sec":600,"retry_after_at":"...","fail_ratio":0}
      from <= t < to the server answers status (429 and 503 rate-limit,
      403 blocks, 404/410 are permanent, other 5xx transient), with a
      Retry-After in seconds or as a date when given; fail_ratio in (0,1)
      makes only that share of requests fail (a flapping server).

Times are RFC 3339, in the years 1970-2199, and the period lasts at most
3660 days (10 years). Unknown fields and record types are ignored.`

// Feed is one feed of a workload and the behaviour of its server.
type Feed struct {
	ID         string
	Kind       string // the generator's label: regular, bursty, dormant, dead, batch, sparse
	Window     int
	TTLMinutes int
	SkipHours  []int
	SkipDays   []string
	ETag       bool
	Bytes      int
	MaxAgeSec  int
	NoDates    bool
	Posts      []int64 // Unix seconds, ascending
	Outages    []Outage
	// Shape is the feed's true posting rate by hour of the week, relative
	// (the generator's have mean 1), HoursOfWeek values from Sunday 00:00 UTC: what the
	// oracle-timed yardstick knows. nil: a constant rate, as far as
	// anyone knows (a real trace's).
	Shape []float64
}

// Outage is a time when a feed's server fails.
type Outage struct {
	From, To      time.Time
	Status        int
	RetryAfterSec int
	RetryAfterAt  time.Time
	FailRatio     float64
}

// Workload is the feeds of a simulation and its measured period.
type Workload struct {
	Start, End time.Time
	Feeds      []*Feed
}

// Days is the length of the measured period in days. (In seconds, as
// End.Sub(Start) would saturate beyond 292 years.)
func (w *Workload) Days() float64 { return float64(w.End.Unix()-w.Start.Unix()) / 86400 }

type traceRecord struct {
	Type          string    `json:"type"`
	FeedID        string    `json:"feed_id,omitempty"`
	Kind          string    `json:"kind,omitempty"`
	At            time.Time `json:"at,omitzero"`
	Start         time.Time `json:"start,omitzero"`
	End           time.Time `json:"end,omitzero"`
	Window        int       `json:"window,omitempty"`
	TTLMinutes    int       `json:"ttl_minutes,omitempty"`
	SkipHours     []int     `json:"skip_hours,omitempty"`
	SkipDays      []string  `json:"skip_days,omitempty"`
	ETag          bool      `json:"etag,omitempty"`
	Bytes         int       `json:"bytes,omitempty"`
	MaxAgeSec     int       `json:"max_age_sec,omitempty"`
	NoDates       bool      `json:"no_dates,omitempty"`
	From          time.Time `json:"from,omitzero"`
	To            time.Time `json:"to,omitzero"`
	Status        int       `json:"status,omitempty"`
	RetryAfterSec int       `json:"retry_after_sec,omitempty"`
	RetryAfterAt  time.Time `json:"retry_after_at,omitzero"`
	FailRatio     float64   `json:"fail_ratio,omitempty"`
	Shape         []float64 `json:"shape,omitempty"`
}

// The times a workload may hold and the longest period it may measure:
// further apart, the durations between its times overflow time.Duration
// (292 years), and a long period takes hours and gigabytes to simulate.
var (
	EarliestTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	LatestTime   = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// MaxDays is the longest measured period, in days: 10 years.
const MaxDays = 3660

// MaxBytes is the largest body a trace's feed may have: larger ones are
// no feed, and would overflow the byte counts.
const MaxBytes = 1 << 30

// ErrTrace wraps every error in a trace file.
var ErrTrace = errors.New("sim: trace")

// traceLine is a trace record as read: times as strings, so that a bad one
// is reported with its field's name.
type traceLine struct {
	traceRecord
	At           string `json:"at"`
	Start        string `json:"start"`
	End          string `json:"end"`
	From         string `json:"from"`
	To           string `json:"to"`
	RetryAfterAt string `json:"retry_after_at"`
}

const timeExample = "2026-06-03T07:24:00Z"

// fieldWants says, in a user's terms, what each field of a record holds.
var fieldWants = map[string]string{
	"type": "a string", "feed_id": "a string", "kind": "a string",
	"at": "an RFC 3339 time", "start": "an RFC 3339 time", "end": "an RFC 3339 time",
	"from": "an RFC 3339 time", "to": "an RFC 3339 time", "retry_after_at": "an RFC 3339 time",
	"window": "a whole number", "ttl_minutes": "a whole number", "bytes": "a whole number",
	"max_age_sec": "a whole number", "status": "a whole number", "retry_after_sec": "a whole number",
	"skip_hours": "a list of hours such as [1,2]", "skip_days": `a list of weekday names such as ["Sunday"]`,
	"etag": "true or false", "no_dates": "true or false", "fail_ratio": "a number",
	"shape": "a list of 168 numbers",
}

// decodeLine reads one line of a trace.
func decodeLine(b []byte) (traceRecord, error) {
	var in traceLine
	if err := json.Unmarshal(b, &in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			// The embedding in traceLine prefixes "traceRecord.".
			te.Field = te.Field[strings.LastIndex(te.Field, ".")+1:]
		}
		if te != nil && fieldWants[te.Field] != "" {
			got, isNumber := strings.CutPrefix(te.Value, "number ")
			if !isNumber {
				got = map[string]string{"string": "a string", "number": "a number", "bool": "true or false",
					"array": "a list", "object": "an object"}[te.Value]
			}
			return traceRecord{}, fmt.Errorf("%q must be %s, not %s", te.Field, fieldWants[te.Field], got)
		}
		return traceRecord{}, fmt.Errorf("not a JSON record: %v", err)
	}
	rec := in.traceRecord
	for _, tf := range []struct {
		name string
		in   string
		out  *time.Time
	}{{"at", in.At, &rec.At}, {"start", in.Start, &rec.Start}, {"end", in.End, &rec.End},
		{"from", in.From, &rec.From}, {"to", in.To, &rec.To}, {"retry_after_at", in.RetryAfterAt, &rec.RetryAfterAt}} {
		if tf.in == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, tf.in)
		if err != nil {
			return rec, fmt.Errorf("%q must be an RFC 3339 time such as %s, not %q", tf.name, timeExample, tf.in)
		}
		if t.Before(EarliestTime) || !t.Before(LatestTime) {
			return rec, fmt.Errorf("%q must be in the years %d-%d, not %s", tf.name, EarliestTime.Year(), LatestTime.Year()-1, tf.in)
		}
		*tf.out = t.UTC()
	}
	return rec, rec.checkValues()
}

// checkValues rejects values no feed or server has.
func (rec *traceRecord) checkValues() error {
	for _, n := range []struct {
		name string
		v    int
	}{{"window", rec.Window}, {"ttl_minutes", rec.TTLMinutes}, {"bytes", rec.Bytes}, {"max_age_sec", rec.MaxAgeSec}, {"retry_after_sec", rec.RetryAfterSec}} {
		if n.v < 0 {
			return fmt.Errorf("%q must be 0 or more, not %d", n.name, n.v)
		}
	}
	if rec.Bytes > MaxBytes {
		return fmt.Errorf(`"bytes" must be at most %d, not %d`, MaxBytes, rec.Bytes)
	}
	for _, h := range rec.SkipHours {
		if h < 0 || h > 23 {
			return fmt.Errorf(`"skip_hours" must hold hours 0-23, not %d`, h)
		}
	}
	for _, d := range rec.SkipDays {
		if !slices.ContainsFunc(weekdays, func(w string) bool { return strings.EqualFold(w, d) }) {
			return fmt.Errorf(`"skip_days" must hold weekday names such as Sunday, not %q`, d)
		}
	}
	if rec.FailRatio < 0 || rec.FailRatio > 1 {
		return fmt.Errorf(`"fail_ratio" must be between 0 and 1, not %v`, rec.FailRatio)
	}
	if rec.Shape != nil {
		sum := 0.0
		for _, v := range rec.Shape {
			if !(v >= 0 && v < 1e6) {
				return fmt.Errorf(`"shape" must hold numbers from 0 to 1e6, not %v`, v)
			}
			sum += v
		}
		if len(rec.Shape) != HoursOfWeek || sum == 0 {
			return fmt.Errorf(`"shape" must hold %d numbers, not all 0`, HoursOfWeek)
		}
	}
	return nil
}

var weekdays = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

// checkPeriod rejects a period too long to simulate.
func checkPeriod(start, end time.Time) error {
	if secs := end.Unix() - start.Unix(); secs > MaxDays*86400 {
		return fmt.Errorf("%.0f days, more than %d (10 years)", float64(secs)/86400, MaxDays)
	}
	return nil
}

// Load reads a trace.
func Load(r io.Reader) (*Workload, error) {
	w := &Workload{}
	byID := map[string]*Feed{}
	feed := func(id string) *Feed {
		f := byID[id]
		if f == nil {
			f = &Feed{ID: id}
			byID[id] = f
			w.Feeds = append(w.Feeds, f)
		}
		return f
	}
	// The first and last posts (Unix seconds) and their lines, for a
	// period from them.
	var first, last int64
	var firstLine, lastLine int
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		rec, err := decodeLine(b)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrTrace, line, err)
		}
		if rec.Type != "period" && rec.Type != "feed" && rec.Type != "post" && rec.Type != "outage" {
			continue
		}
		if rec.Type != "period" && rec.FeedID == "" {
			return nil, fmt.Errorf("%w: line %d: %s record without feed_id", ErrTrace, line, rec.Type)
		}
		switch rec.Type {
		case "period":
			if rec.Start.IsZero() || !rec.End.After(rec.Start) {
				return nil, fmt.Errorf("%w: line %d: period needs start before end", ErrTrace, line)
			}
			if err := checkPeriod(rec.Start, rec.End); err != nil {
				return nil, fmt.Errorf("%w: line %d: the period lasts %v", ErrTrace, line, err)
			}
			w.Start, w.End = rec.Start, rec.End
		case "feed":
			f := feed(rec.FeedID)
			f.Kind, f.Window, f.TTLMinutes, f.SkipHours, f.SkipDays = rec.Kind, rec.Window, rec.TTLMinutes, rec.SkipHours, rec.SkipDays
			f.ETag, f.Bytes, f.MaxAgeSec, f.NoDates = rec.ETag, rec.Bytes, rec.MaxAgeSec, rec.NoDates
			f.Shape = rec.Shape
		case "post":
			if rec.At.IsZero() {
				return nil, fmt.Errorf("%w: line %d: post without at", ErrTrace, line)
			}
			f := feed(rec.FeedID)
			at := rec.At.Unix()
			f.Posts = append(f.Posts, at)
			if firstLine == 0 || at < first {
				first, firstLine = at, line
			}
			if lastLine == 0 || at > last {
				last, lastLine = at, line
			}
		case "outage":
			if rec.From.IsZero() || !rec.To.After(rec.From) || rec.Status < 100 || rec.Status > 599 {
				return nil, fmt.Errorf("%w: line %d: outage needs from before to and a status 100-599", ErrTrace, line)
			}
			f := feed(rec.FeedID)
			f.Outages = append(f.Outages, Outage{From: rec.From, To: rec.To, Status: rec.Status,
				RetryAfterSec: rec.RetryAfterSec, RetryAfterAt: rec.RetryAfterAt, FailRatio: rec.FailRatio})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: line %d: %v", ErrTrace, line+1, err)
	}
	if len(w.Feeds) == 0 {
		return nil, fmt.Errorf("%w: no feeds", ErrTrace)
	}
	w.normalize()
	if w.Start.IsZero() {
		if firstLine == 0 {
			return nil, fmt.Errorf("%w: no posts and no period", ErrTrace)
		}
		start, end := time.Unix(first, 0).UTC(), time.Unix(last, 0).UTC().Add(24*time.Hour)
		if err := checkPeriod(start, end); err != nil {
			return nil, fmt.Errorf("%w: line %d has the first post and line %d the last: with no period record the period runs from one to a day after the other, %v",
				ErrTrace, firstLine, lastLine, err)
		}
		w.Start, w.End = start, end
	}
	return w, nil
}

// normalize sorts posts and outages and fills defaults.
func (w *Workload) normalize() {
	for _, f := range w.Feeds {
		if f.Window <= 0 {
			f.Window = 20
		}
		if f.Bytes <= 0 {
			f.Bytes = 10000
		}
		slices.Sort(f.Posts)
		sort.Slice(f.Outages, func(i, j int) bool { return f.Outages[i].From.Before(f.Outages[j].From) })
	}
}

// Write writes w as a trace: the period, then each feed, its outages and
// its posts. Posts too old for any poll to see (beyond the window before
// the start) are left out: they cannot change a result.
func (w *Workload) Write(out io.Writer) error {
	bw := bufio.NewWriterSize(out, 64*1024)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(traceRecord{Type: "period", Start: w.Start, End: w.End}); err != nil {
		return err
	}
	start := w.Start.Unix()
	for _, f := range w.Feeds {
		rec := traceRecord{Type: "feed", FeedID: f.ID, Kind: f.Kind, Window: f.Window, TTLMinutes: f.TTLMinutes,
			SkipHours: f.SkipHours, SkipDays: f.SkipDays, ETag: f.ETag, Bytes: f.Bytes, MaxAgeSec: f.MaxAgeSec, NoDates: f.NoDates,
			Shape: f.Shape}
		if err := enc.Encode(rec); err != nil {
			return err
		}
		for _, o := range f.Outages {
			if err := enc.Encode(traceRecord{Type: "outage", FeedID: f.ID, From: o.From, To: o.To, Status: o.Status,
				RetryAfterSec: o.RetryAfterSec, RetryAfterAt: o.RetryAfterAt, FailRatio: o.FailRatio}); err != nil {
				return err
			}
		}
		before, _ := slices.BinarySearch(f.Posts, start)
		for _, p := range f.Posts[max(0, before-f.Window):] {
			if err := enc.Encode(traceRecord{Type: "post", FeedID: f.ID, At: time.Unix(p, 0).UTC()}); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}
