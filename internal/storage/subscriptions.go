package storage

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// SubscriptionsFile is the key of the subscription list.
const SubscriptionsFile = "subscriptions.ndjson"

// Subscriptions returns the subscription list in file order. A store with no
// subscriptions file has none; a malformed line is skipped and counted in
// bad. A large list is read from its snapshot (see SnapshotMinBytes).
func (s *Store) Subscriptions() (subs []ndjson.Subscription, bad int, err error) {
	return s.subscriptions(false)
}

// subscriptions is Subscriptions, writing a new snapshot if rewrite is set.
func (s *Store) subscriptions(rewrite bool) (subs []ndjson.Subscription, bad int, err error) {
	f, err := s.openLog(SubscriptionsFile)
	if err != nil || f == nil {
		return nil, 0, err
	}
	defer f.Close()
	from, lines := int64(0), 0
	if snap, ok := loadSnapshot[ndjson.Subscription](s, snapshotKey(snapshotSubscriptions), f); ok {
		defer snap.close()
		if all, err := snapshotRecords[ndjson.Subscription](snap, 64); err == nil {
			subs, from, lines, bad = all, snap.head.Covered, snap.head.Lines, snap.head.Bad
		}
	}
	tail, undecodable := 0, 0
	end, malformed, err := readLog(f, SubscriptionsFile, from, func(_, _ int64, l ndjson.Line) error {
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
	if err == nil && (rewrite || tail > snapshotMaxTail+len(subs)/64) {
		writeSnapshot(s, snapshotKey(snapshotSubscriptions), f, snapshotSpec{covered: end, lines: lines + tail, bad: bad}, len(subs), sliceRecords(subs), subIndexer)
	}
	return subs, bad, err
}

// snapshotSubscriptions names the subscription list's snapshot.
const snapshotSubscriptions = "subscriptions"

// Subs is the subscription list for a reader that needs every
// subscription's scheduling settings but the whole of only a few (feed-store):
// OpenSubscriptions reads the snapshot's index (snapindex.go) and the lines
// after it, and Get decodes one record when asked. Without a usable
// index it holds the whole list, as Subscriptions returns it.
type Subs struct {
	s    *Store
	idx  *snapIndex            // nil: list is the whole list
	list []ndjson.Subscription // the whole list, or the lines after the snapshot
	got  map[string]ndjson.Subscription
	last map[string]int // the whole list: the last place of each feed id
}

// OpenSubscriptions opens the subscription list for Subs' lookups. The
// caller closes it.
func (s *Store) OpenSubscriptions() (*Subs, error) {
	l := &Subs{s: s, got: map[string]ndjson.Subscription{}}
	f, err := s.openLog(SubscriptionsFile)
	if err != nil || f == nil {
		return l, err
	}
	defer f.Close()
	snap, ok := loadSnapshot[ndjson.Subscription](s, snapshotKey(snapshotSubscriptions), f)
	if ok {
		if l.idx, err = snap.readIndex(subIndexer.shape); err != nil {
			snap.close()
			l.idx = nil
		}
	}
	if l.idx == nil {
		// A snapshot without a usable index (written before indexes, or
		// for another projection) would stay until the list is edited:
		// this load writes one that has it, as Subscriptions writes one
		// for a long tail, so that the next load is lazy again.
		l.list, _, err = s.subscriptions(ok)
		return l, err
	}
	// The lines after the snapshot, as Subscriptions reads them.
	_, _, err = readLog(f, SubscriptionsFile, l.idx.head.Covered, func(_, _ int64, line ndjson.Line) error {
		var sub ndjson.Subscription
		if line.Type == ndjson.TypeSubscription && line.Decode(&sub) == nil {
			l.list = append(l.list, sub)
		}
		return nil
	})
	if err != nil {
		l.Close()
	}
	return l, err
}

// Close lets go of the snapshot file the list keeps open.
func (l *Subs) Close() {
	if l.idx != nil {
		l.idx.close()
		l.idx = nil
	}
}

// Lazy reports whether the list holds only some subscriptions (see Subs).
func (l *Subs) Lazy() bool { return l.idx != nil }

// Len is the number of subscriptions.
func (l *Subs) Len() int {
	if l.idx != nil {
		return l.idx.n + len(l.list)
	}
	return len(l.list)
}

// Get returns the subscription of feedID (the last one, should the list
// name a feed twice).
func (l *Subs) Get(feedID string) (ndjson.Subscription, bool, error) {
	if l.idx == nil {
		if l.last == nil {
			l.last = make(map[string]int, len(l.list))
			for i, s := range l.list {
				l.last[s.FeedID] = i
			}
		}
		i, ok := l.last[feedID]
		if !ok {
			return ndjson.Subscription{}, false, nil
		}
		return l.list[i], true, nil
	}
	for i := len(l.list) - 1; i >= 0; i-- {
		if l.list[i].FeedID == feedID {
			return l.list[i], true, nil
		}
	}
	if sub, ok := l.got[feedID]; ok {
		return sub, true, nil
	}
	i, ok := l.idx.find(feedID)
	if !ok {
		return ndjson.Subscription{}, false, nil
	}
	var sub ndjson.Subscription
	if err := l.idx.record(i, unsafe.Pointer(&sub)); err != nil || sub.FeedID != feedID {
		// Not the record the index promised: the whole list, then.
		if _, err := l.All(); err != nil {
			return ndjson.Subscription{}, false, err
		}
		return l.Get(feedID)
	}
	l.got[feedID] = sub
	return sub, true, nil
}

// All returns the whole list; from then on the list holds it.
func (l *Subs) All() ([]ndjson.Subscription, error) {
	if l.idx != nil {
		all, _, err := l.s.Subscriptions()
		if err != nil {
			return nil, err
		}
		l.Close()
		l.list, l.got = all, nil
	}
	return l.list, nil
}

// EditSubscriptions loads the subscription list, lets edit change it, and
// writes it back atomically, holding a lock so that two concurrent edits
// (two feed-sub runs) cannot lose each other's changes. Nothing is written
// when edit returns an error.
func (s *Store) EditSubscriptions(edit func([]ndjson.Subscription) ([]ndjson.Subscription, error)) error {
	unlock, err := s.lockFile(".subscriptions.lock", true)
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
		writeSnapshot(s, snapshotKey(snapshotSubscriptions), f, snapshotSpec{covered: int64(len(data)), lines: len(subs)}, len(subs), sliceRecords(subs), subIndexer)
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
