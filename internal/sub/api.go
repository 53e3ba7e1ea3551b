package sub

import (
	"context"
	"fmt"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/discover"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// What feed-serve's API shares with feed-sub, so that both give the same
// answers: a subscription as ls --json shows it, and the feed add
// --discover subscribes to.

// Listing is a subscription as feed-sub ls --json writes it, and as
// feed-serve's GET /feeds returns it: the record, credentials redacted,
// and the feed's status.
type Listing = listing

// ListingOf is the listing of the subscription s, whose state is fs, at
// now, without its secrets: the password of its basic auth, the values
// of headers that carry credentials, a webhook source's secret. Its push
// and backfill are WithPush's to add.
func ListingOf(s ndjson.Subscription, fs catalog.FeedState, now time.Time) *Listing {
	if s.Auth != nil {
		s.Auth = &ndjson.Auth{Username: s.Auth.Username, Password: "(redacted)"}
	}
	s.Headers = httpx.RedactHeaderMap(s.Headers)
	if s.WebhookSecret != "" {
		s.WebhookSecret = redactedValue
	}
	return listingOf(s, fs, now)
}

// Discovered returns the feed add --discover subscribes to for the page
// pageURL: the best feed discover.Discover finds, and how many more it
// found.
func Discovered(ctx context.Context, cfg discover.Config, pageURL string) (f discover.Feed, more int, err error) {
	feeds, err := discover.Discover(ctx, cfg, pageURL)
	if err != nil {
		return f, 0, err
	}
	if len(feeds) == 0 {
		return f, 0, fmt.Errorf("%w: no feed found at %s", ErrInvalid, pageURL)
	}
	return feeds[0], len(feeds) - 1, nil
}
