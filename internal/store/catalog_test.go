package store

import (
	"context"
	"testing"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The tests' windows into the store's catalog.

func openCatalog(t *testing.T, st *storedir.Store) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Open(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return cat
}

// keepLinks makes st's catalog keep its link index, as the first
// feed-dedup --cross-feed run on a store does (catalog.KeepLinks).
func keepLinks(t *testing.T, st *storedir.Store) {
	t.Helper()
	cat, err := catalog.Open(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if _, err := cat.KeepLinks(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// statesView is every feed state of a store, by feed id.
type statesView struct{ ByFeed map[string]catalog.FeedState }

func statesOf(t *testing.T, st *storedir.Store) (*statesView, error) {
	t.Helper()
	m, err := openCatalog(t, st).States(context.Background())
	return &statesView{m}, err
}

func putStates(t *testing.T, st *storedir.Store, states ...catalog.FeedState) {
	t.Helper()
	if err := openCatalog(t, st).Update(context.Background(), func(tx *catalog.Tx) error { return tx.PutStates(states...) }); err != nil {
		t.Fatal(err)
	}
}

func editSubs(t *testing.T, st *storedir.Store, edit func([]ndjson.Subscription) ([]ndjson.Subscription, error)) {
	t.Helper()
	if err := openCatalog(t, st).EditSubscriptions(context.Background(), edit); err != nil {
		t.Fatal(err)
	}
}

func subsOf(t *testing.T, st *storedir.Store) []ndjson.Subscription {
	t.Helper()
	subs, err := openCatalog(t, st).Subscriptions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return subs
}
