package storage

import (
	"slices"
	"strings"

	"github.com/feedpipe/feedpipe/internal/sched"
)

// SchedInputs calls fn for every subscription with its place in the list,
// its scheduling settings and the demand inputs of its feed's state (a
// zero State's for a feed without one): everything feed-store's budget
// scale is computed from. The calls come in no particular order. When
// both are lazy it reads the indexes only, joining them in one pass in
// feed id order, and decodes no record: at 100,000 feeds that takes
// milliseconds, where loading every state and subscription took most of a
// second. fn must not keep sub and in: they are reused.
func SchedInputs(subs *Subs, states *States, fn func(place int, sub *SubSched, in *sched.DemandInputs)) error {
	if err := schedInputs(subs, states, fn); err != errSnapshotIndex {
		return err
	}
	// A projection the index's checksum passed but that does not read
	// (a writer's bug): the whole list and every state, then.
	if _, err := subs.All(); err != nil {
		return err
	}
	if err := states.Load(); err != nil {
		return err
	}
	return schedInputs(subs, states, fn)
}

// overlaid is a feed's demand inputs from a state newer than the whole
// snapshot's.
type overlaid struct {
	feedID string
	in     sched.DemandInputs
}

func schedInputs(subs *Subs, states *States, fn func(place int, sub *SubSched, in *sched.DemandInputs)) error {
	none := stateDemandInputs(&FeedState{})
	var (
		base *snapIndex
		over []overlaid // newer than base, by feed id: the deltas', then ByFeed's
	)
	if states.chain != nil {
		base = states.chain[0]
		newer := map[string]sched.DemandInputs{}
		for _, x := range states.chain[1:] {
			for j := range x.n {
				in, ok := readDemandInputs(x.proj(j))
				if !ok {
					return errSnapshotIndex
				}
				newer[x.key(j)] = in
			}
		}
		for id, fs := range states.ByFeed {
			newer[id] = stateDemandInputs(&fs)
		}
		over = make([]overlaid, 0, len(newer))
		for id, in := range newer {
			over = append(over, overlaid{id, in})
		}
		slices.SortFunc(over, func(a, b overlaid) int { return strings.Compare(a.feedID, b.feedID) })
	}
	// stateOf looks one feed up.
	stateOf := func(feedID string) (sched.DemandInputs, bool) {
		if base == nil {
			fs := states.ByFeed[feedID]
			return stateDemandInputs(&fs), true
		}
		if o, ok := slices.BinarySearchFunc(over, feedID, func(o overlaid, id string) int { return strings.Compare(o.feedID, id) }); ok {
			return over[o].in, true
		}
		if j, ok := base.find(feedID); ok {
			return readDemandInputs(base.proj(j))
		}
		return none, true
	}
	// One sub and one in for every call: passed to fn, they would
	// otherwise be allocated for each subscription.
	var (
		sub SubSched
		in  sched.DemandInputs
		ok  bool
	)
	x := subs.idx
	if x != nil && base != nil {
		// Both in feed id order: one pass.
		k, o := 0, 0
		for j := range x.n {
			key := x.key(j)
			if !readSubSchedInto(&sub, x.proj(j)) {
				return errSnapshotIndex
			}
			for o < len(over) && over[o].feedID < key {
				o++
			}
			for k < base.n && base.key(k) < key {
				k++
			}
			in = none
			switch {
			case o < len(over) && over[o].feedID == key:
				in = over[o].in
			case k < base.n && base.key(k) == key:
				last := k
				for last+1 < base.n && base.key(last+1) == key {
					last++
				}
				if in, ok = readDemandInputs(base.proj(last)); !ok {
					return errSnapshotIndex
				}
			}
			fn(x.rec(j), &sub, &in)
		}
	} else if x != nil {
		for j := range x.n {
			if !readSubSchedInto(&sub, x.proj(j)) {
				return errSnapshotIndex
			}
			if in, ok = stateOf(x.key(j)); !ok {
				return errSnapshotIndex
			}
			fn(x.rec(j), &sub, &in)
		}
	}
	first := subs.Len() - len(subs.list)
	for i := range subs.list {
		s := &subs.list[i]
		if in, ok = stateOf(s.FeedID); !ok {
			return errSnapshotIndex
		}
		sub = subSchedOf(s)
		fn(first+i, &sub, &in)
	}
	return nil
}
