package storage

import (
	"errors"
	"fmt"
	"strings"

	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// SubscriptionsFile is the key of the subscription list.
const SubscriptionsFile = "subscriptions.ndjson"

// Subscriptions returns the subscription list in file order. A store with no
// subscriptions file has none; a malformed line is skipped and counted in
// bad. A large list is read from its snapshot (see SnapshotMinBytes).
func (s *Store) Subscriptions() (subs []ndjson.Subscription, bad int, err error) {
	f, err := s.openLog(SubscriptionsFile)
	if err != nil || f == nil {
		return nil, 0, err
	}
	defer f.Close()
	from, lines := int64(0), 0
	if snap, ok := loadSnapshot[ndjson.Subscription](s, snapshotSubscriptions, f); ok {
		defer snap.close()
		if all, err := snapshotRecords[ndjson.Subscription](snap, 64); err == nil {
			subs, from, lines, bad = all, snap.head.Covered, snap.head.Lines, snap.head.Bad
		}
	}
	tail, undecodable := 0, 0
	end, malformed, err := readLog(f, SubscriptionsFile, from, func(l ndjson.Line) error {
		tail++
		if l.Type != ndjson.TypeSubscription {
			return nil
		}
		var sub ndjson.Subscription
		if l.Decode(&sub) != nil {
			undecodable++
			return nil
		}
		subs = append(subs, sub)
		return nil
	})
	bad += malformed + undecodable
	if err == nil && tail > snapshotMaxTail+len(subs)/64 {
		writeSnapshot(s, snapshotSubscriptions, f, end, lines+tail, bad, len(subs), sliceRecords(subs))
	}
	return subs, bad, err
}

// snapshotSubscriptions names the subscription list's snapshot.
const snapshotSubscriptions = "subscriptions"

// EditSubscriptions loads the subscription list, lets edit change it, and
// writes it back atomically, holding a lock so that two concurrent edits
// (two feed-sub runs) cannot lose each other's changes. Nothing is written
// when edit returns an error.
func (s *Store) EditSubscriptions(edit func([]ndjson.Subscription) ([]ndjson.Subscription, error)) error {
	unlock, err := lockFile(s.Path(".subscriptions.lock"), true)
	if err != nil {
		return err
	}
	defer unlock()
	subs, bad, err := s.Subscriptions()
	if err != nil {
		return err
	}
	if bad > 0 {
		return fmt.Errorf("storage: %s has %d malformed lines; fix or remove them before editing, so that nothing is lost", s.Path(SubscriptionsFile), bad)
	}
	subs, err = edit(subs)
	if err != nil {
		return err
	}
	data, err := encodeLines(subs)
	if err != nil {
		return err
	}
	if err := s.WriteFileAtomic(SubscriptionsFile, data); err != nil {
		return err
	}
	// The old snapshot is of the old file: save one of the new.
	if f, err := s.openLog(SubscriptionsFile); err == nil && f != nil {
		writeSnapshot(s, snapshotSubscriptions, f, int64(len(data)), len(subs), 0, len(subs), sliceRecords(subs))
		f.Close()
	}
	return nil
}

// ErrNoSuchSubscription is returned by FindSubscription for a reference
// that names no subscription, or more than one.
var ErrNoSuchSubscription = errors.New("no such subscription")

// FindSubscription returns the index of the subscription that ref names: a
// feed id, a unique prefix of one (at least 4 characters), or a URL.
func FindSubscription(subs []ndjson.Subscription, ref string) (int, error) {
	ref = strings.TrimSpace(ref)
	norm, _ := urlnorm.Normalize(ref)
	var matches []int
	for i, s := range subs {
		if s.FeedID == ref || s.URL == ref || (norm != "" && s.URL == norm) {
			return i, nil
		}
		if strings.HasPrefix(s.FeedID, ref) {
			matches = append(matches, i)
		}
	}
	switch {
	case len(matches) == 1 && len(ref) >= 4:
		return matches[0], nil
	case len(matches) > 0 && len(ref) < 4:
		return -1, fmt.Errorf("%w: %q is too short: give at least 4 characters of the feed id", ErrNoSuchSubscription, ref)
	case len(matches) > 1:
		ids := make([]string, 0, 3)
		for _, i := range matches[:min(3, len(matches))] {
			ids = append(ids, subs[i].FeedID[:min(12, len(subs[i].FeedID))]+"…")
		}
		return -1, fmt.Errorf("%w: %q is ambiguous: it begins %d feed ids (%s)", ErrNoSuchSubscription, ref, len(matches), strings.Join(ids, ", "))
	}
	return -1, fmt.Errorf("%w: nothing matches %q (see feed-sub ls)", ErrNoSuchSubscription, ref)
}
