package ndjson

import "cmp"

// Record types feed-store writes for the scheduler.
const (
	// TypeDecision is the scheduler's decision for one feed after a fetch.
	TypeDecision = "decision"
	// TypeFeedDisabled announces that the scheduler took a feed out of
	// service: a permanent error, or too many failures in a row.
	TypeFeedDisabled = "feed_disabled"
	// TypeFeedReenabled announces that a feed disabled for errors answered
	// a probe and is back in service.
	TypeFeedReenabled = "feed_reenabled"
)

// Decision kinds (Decision.Decision), docs/design.md#states-and-decisions.
const (
	DecisionFetchNow = "fetch_now"
	DecisionDefer    = "defer"
	DecisionBackoff  = "backoff"
	DecisionPause    = "pause"
)

// Decision is feed-store's record of the scheduler's decision for one feed:
// what it decided, why, when the feed is due next, and every input the
// decision used. feed-store writes one after each fetch record it stores
// and logs the same. The fields mirror internal/sched.Decision.
type Decision struct {
	Header
	FeedID  string `json:"feed_id"`
	FetchID string `json:"fetch_id"` // the fetch decided upon; "" for a nudge
	// Decision is fetch_now, defer, backoff or pause.
	Decision       string         `json:"decision"`
	Reason         string         `json:"reason"`
	At             Time           `json:"at"`
	NextAt         Time           `json:"next_at"`
	Until          Time           `json:"until"`
	State          string         `json:"state"`
	Event          string         `json:"event"`
	DisabledReason string         `json:"disabled_reason"`
	Inputs         DecisionInputs `json:"inputs"`
}

// DecisionInputs are the values a decision used; durations are whole
// seconds.
type DecisionInputs struct {
	Policy   string `json:"policy"`
	Override string `json:"override"`

	Outcome     string `json:"outcome"`
	HTTPStatus  int    `json:"http_status"`
	NotModified bool   `json:"not_modified"`
	Truncated   bool   `json:"truncated"`
	ErrorClass  string `json:"error_class"`
	ErrorCode   string `json:"error_code"`
	NewEntries  int    `json:"new_entries"`
	Items       int    `json:"items"`

	IntervalBeforeSec int `json:"interval_before_sec"`
	IntervalAfterSec  int `json:"interval_after_sec"`
	MinSec            int `json:"min_sec"`
	MaxSec            int `json:"max_sec"`

	EWMASecs      float64 `json:"ewma_secs"`
	RatePerDay    float64 `json:"rate_per_day"`
	Scale         float64 `json:"scale"`
	BaseSec       int     `json:"base_sec"`
	ProfileFactor float64 `json:"profile_factor"`
	TailCapSec    int     `json:"tail_cap_sec"`
	WindowCapSec  int     `json:"window_cap_sec"`
	PatternGain   float64 `json:"pattern_gain"`
	PatternHours  string  `json:"pattern_hours"`
	PatternDays   string  `json:"pattern_days"`
	DayStart      int     `json:"day_start"`
	PollWeight    float64 `json:"poll_weight"`
	Slot          string  `json:"slot"`
	CronNextAt    string  `json:"cron_next_at"`
	CronError     string  `json:"cron_error"`

	TTLSec         int `json:"ttl_sec"`
	MaxAgeSec      int `json:"max_age_sec"`
	FloorSec       int `json:"floor_sec"`
	RetryAfterSecs int `json:"retry_after_secs"`

	SkipHours     []int    `json:"skip_hours"`
	SkipDays      []string `json:"skip_days"`
	SkipMovedFrom Time     `json:"skip_moved_from"`
	SkipIgnored   bool     `json:"skip_ignored"`

	BackoffStep         int     `json:"backoff_step"`
	BackoffSec          int     `json:"backoff_sec"`
	JitterSec           int     `json:"jitter_sec"`
	ConsecutiveFailures int     `json:"consecutive_failures"`
	ErrorBudget         float64 `json:"error_budget"`
	ErrorBudgetSize     float64 `json:"error_budget_size"`
	Probe               bool    `json:"probe"`
}

// FeedEvent is a feed_disabled or feed_reenabled event: a feed left or
// re-entered service. feed-store writes it to stdout and to
// events/YYYY-MM-DD.ndjson, beside the entry events.
type FeedEvent struct {
	Header
	FeedID  string `json:"feed_id"`
	FetchID string `json:"fetch_id"`
	URL     string `json:"url"`
	At      Time   `json:"at"`
	// DisabledReason says why the feed was disabled (for
	// feed_reenabled: why it had been).
	DisabledReason string `json:"disabled_reason"`
	// Error is the error of the fetch that disabled it; null for
	// feed_reenabled.
	Error *Error `json:"error"`
	// NextAt is when the feed is fetched next: a probe of a disabled feed,
	// or null when it is not probed (enable it with feed-sub enable).
	NextAt Time `json:"next_at"`
}

// Check reports what makes a decision unusable: its feed_id must be a
// feed id, its fetch_id empty or a fetch id.
func (d *Decision) Check() error {
	c := checker{record: TypeDecision}
	c.feedID("feed_id", d.FeedID, false)
	c.fetchID("fetch_id", d.FetchID, true)
	return c.err
}

// Check reports what makes a feed event unusable: its feed_id must be a
// feed id, its fetch_id empty or a fetch id.
func (e *FeedEvent) Check() error {
	c := checker{record: cmp.Or(e.Type, "feed event")}
	c.feedID("feed_id", e.FeedID, false)
	c.fetchID("fetch_id", e.FetchID, true)
	return c.err
}
