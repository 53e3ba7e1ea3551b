package catalog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// EventFeed is what an event says of its feed, so that a consumer needs
// no lookup: the feed's name (the subscription's, else the feed's own
// title) and its labels.
type EventFeed struct {
	Name   string
	Labels []string
}

// EventFeed returns what an event says of the feed feedID; zero (no name,
// no labels) for a feed without a subscription.
func (c *Catalog) EventFeed(ctx context.Context, feedID string) (EventFeed, error) {
	row := c.readRow(ctx, kept, `SELECT coalesce(s.name, ''), coalesce(s.labels, '[]'), coalesce(st.title, '')
		FROM feeds f LEFT JOIN subscriptions s ON s.feed_key = f.key LEFT JOIN feed_state st ON st.feed_key = f.key
		WHERE f.feed_id = ?`, feedID)
	var name, labels, title string
	switch err := row.Scan(&name, &labels, &title); {
	case errors.Is(err, sql.ErrNoRows):
		return EventFeed{Labels: []string{}}, nil
	case err != nil:
		return EventFeed{}, err
	}
	ef := EventFeed{Name: name}
	if ef.Name == "" {
		ef.Name = title
	}
	if err := json.Unmarshal([]byte(labels), &ef.Labels); err != nil || ef.Labels == nil {
		ef.Labels = []string{}
	}
	return ef, nil
}

// Fill sets the feed's name and labels in the event ev.
func (ef EventFeed) Fill(ev *ndjson.Event) {
	ev.FeedName, ev.Labels = ef.Name, ef.Labels
	if ev.Labels == nil {
		ev.Labels = []string{}
	}
}
