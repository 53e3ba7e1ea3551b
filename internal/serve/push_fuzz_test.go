package serve

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// hubQueries are hubs' requests at a callback, good and bad; they seed
// FuzzHubQuery.
var hubQueries = []struct {
	query string
	ok    bool
}{
	{"hub.mode=subscribe&hub.topic=https%3A%2F%2Fexample.org%2Ffeed&hub.challenge=abc123&hub.lease_seconds=864000", true},
	{"hub.mode=unsubscribe&hub.topic=https%3A%2F%2Fexample.org%2Ffeed&hub.challenge=abc", true},
	{"hub.mode=denied&hub.topic=https%3A%2F%2Fexample.org%2Ffeed&hub.reason=over+quota%1B%5B31m", true},
	{"hub.mode=subscribe&hub.topic=https%3A%2F%2Fexample.org%2Ffeed&hub.challenge=abc&hub.lease_seconds=-1", false},
	{"hub.mode=subscribe&hub.topic=https%3A%2F%2Fexample.org%2Ffeed&hub.challenge=a+b", false},
	{"hub.mode=subscribe&hub.topic=https%3A%2F%2Fexample.org%2Ffeed", false},
	{"hub.mode=subscribe&hub.topic=%2Frelative&hub.challenge=x", false},
	{"hub.mode=publish&hub.topic=https%3A%2F%2Fexample.org%2F&hub.challenge=x", false},
	{"hub.topic=https%3A%2F%2Fexample.org%2F", false},
	{"%zz", false},
}

func TestHubQuery(t *testing.T) {
	for _, tt := range hubQueries {
		q, _ := url.ParseQuery(tt.query)
		h, err := parseHubQuery(q)
		if (err == nil) != tt.ok {
			t.Errorf("%s: %+v, %v", tt.query, h, err)
		}
	}
	q, _ := url.ParseQuery(hubQueries[2].query)
	if h, _ := parseHubQuery(q); h.Reason != "over quota[31m" {
		t.Errorf("reason %q", h.Reason)
	}
}

// FuzzHubQuery: whatever the query, a hub's request read has a mode we
// know, an absolute topic, a challenge (when one is echoed) of printable
// ASCII within its cap, a lease within its cap, and a reason without
// control characters, in UTF-8.
func FuzzHubQuery(f *testing.F) {
	for _, tt := range hubQueries {
		f.Add(tt.query)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, _ := url.ParseQuery(raw)
		h, err := parseHubQuery(q)
		if err != nil {
			if h != (hubRequest{}) {
				t.Errorf("an error and a request: %+v", h)
			}
			return
		}
		switch h.Mode {
		case "subscribe", "unsubscribe":
			if h.Challenge == "" || len(h.Challenge) > maxChallenge || strings.IndexFunc(h.Challenge, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
				t.Errorf("challenge %q", h.Challenge)
			}
		case "denied":
			if h.Challenge != "" {
				t.Errorf("a denial with a challenge")
			}
		default:
			t.Errorf("mode %q", h.Mode)
		}
		if u, err := url.Parse(h.Topic); err != nil || !u.IsAbs() || len(h.Topic) > maxTopic {
			t.Errorf("topic %q", h.Topic)
		}
		if h.Lease < 0 || h.Lease > maxLease {
			t.Errorf("lease %v", h.Lease)
		}
		if !utf8.ValidString(h.Reason) || len(h.Reason) > maxReason || strings.ContainsAny(h.Reason, "\x00\x1b\r\n") {
			t.Errorf("reason %q", h.Reason)
		}
	})
}
