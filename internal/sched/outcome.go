package sched

import "time"

// OutcomeKind says what Next is told about.
type OutcomeKind string

// The kinds of outcome.
const (
	// Fetched: a fetch happened (the default, also for "").
	Fetched OutcomeKind = "fetch"
	// Nudged: a person asked for a fetch now (feed-sub refetch).
	Nudged OutcomeKind = "manual"
	// NeverFetched: a new subscription, to be fetched at once.
	NeverFetched OutcomeKind = "new"
)

// Error classes, as in a fetch record's error.class.
const (
	ClassTransient   = "transient"
	ClassPermanent   = "permanent"
	ClassRateLimited = "rate_limited"
	ClassBlocked     = "blocked"
	ClassParse       = "parse"
)

// Outcome is one fetch's result as feed-store knows it from a fetch record
// and the entries before it, or a nudge, or a new feed.
type Outcome struct {
	Kind OutcomeKind `json:"kind,omitempty"`
	// At is when the fetch was made (fetched_at). Floors and intervals
	// count from it; zero means the now given to Next.
	At time.Time `json:"at,omitzero"`

	Status      int  `json:"status,omitempty"`       // HTTP status; 0 when no response
	NotModified bool `json:"not_modified,omitempty"` // a 304 answer
	Unchanged   bool `json:"unchanged,omitempty"`    // a 200 with the same body as last time
	Truncated   bool `json:"truncated,omitempty"`    // the body was cut at the size cap
	// ErrorClass is "" for success, else transient, permanent,
	// rate_limited, blocked or parse; ErrorCode is the fetch record's code
	// (http_503, not_a_feed, timeout, ...).
	ErrorClass string `json:"error_class,omitempty"`
	ErrorCode  string `json:"error_code,omitempty"`
	// RetryAfterSec is Retry-After in seconds; RetryUntil the same given
	// as an HTTP date. The later of the two is honoured.
	RetryAfterSec int       `json:"retry_after_sec,omitempty"`
	RetryUntil    time.Time `json:"retry_until,omitzero"`

	// NewEntries is how many entries were new. Published holds their
	// publication times, zero where the entry had none; a missing or
	// future time counts as At (first_seen, docs/scheduler.md §3). When Published
	// is shorter than NewEntries the rest count as At.
	NewEntries int         `json:"new_entries,omitempty"`
	Published  []time.Time `json:"published,omitempty"`
	// Items is how many items the document held (parse.items).
	Items int `json:"items,omitempty"`
	// Withheld is how many of them the fetch left out (parse.items less
	// parse.entries when the due record had an item_limit: a first or
	// stale fetch keeps only the newest). They come as new entries with
	// the next answer that shows them, and are the feed's history, not
	// items posted since.
	Withheld int `json:"withheld,omitempty"`

	// Parsed says the body was parsed, so the hints below are the feed's
	// current ones (an empty list then clears a stored hint). Without it
	// the stored hints stay.
	Parsed     bool     `json:"parsed,omitempty"`
	TTLMinutes int      `json:"ttl_minutes,omitempty"`
	SkipHours  []int    `json:"skip_hours,omitempty"`
	SkipDays   []string `json:"skip_days,omitempty"`
	// MaxAgeSec is the response's freshness lifetime: Cache-Control
	// max-age, else Expires minus Date. A floor like ttl.
	MaxAgeSec int `json:"max_age_sec,omitempty"`
}

// failed reports whether the fetch failed.
func (o Outcome) failed() bool {
	return o.ErrorClass != "" || o.Status >= 400 || (o.Status != 0 && o.Status < 200)
}

// class is the error class, derived from the status when the fetch record
// had none (as feed-fetch would classify it).
func (o Outcome) class() string {
	if o.ErrorClass != "" {
		return o.ErrorClass
	}
	switch s := o.Status; {
	case s == 429:
		return ClassRateLimited
	case s == 503 && o.hasRetryAfter():
		return ClassRateLimited
	case s == 403:
		return ClassBlocked
	case s == 408 || s >= 500:
		return ClassTransient
	case s >= 400 || (s != 0 && s < 200):
		return ClassPermanent
	}
	return ""
}

// CodeAddressRefused is the error code of a fetch this machine refused to
// make: the feed's address is private, loopback or the like, and
// --allow-private was not given (internal/httpx; class blocked).
const CodeAddressRefused = "address_refused"

// refused reports whether this machine's own rule refused the fetch: the
// publisher was never asked, so it says nothing about the feed. (By its
// code, whatever its class: fetch records written before the class was
// blocked say permanent.)
func (o Outcome) refused() bool { return o.ErrorCode == CodeAddressRefused }

func (o Outcome) hasRetryAfter() bool { return o.RetryAfterSec > 0 || !o.RetryUntil.IsZero() }

// permanent reports whether the failure disables the feed at once: a
// permanent class (404, 410, bad URL) or a body that is not a feed.
func (o Outcome) permanent() bool {
	c := o.class()
	return c == ClassPermanent || (c == ClassParse && o.ErrorCode == "not_a_feed")
}
