package ndjson

// EventFor is the event announcing a stored entry: new_entry, or
// updated_entry for an entry stored with status "updated", or
// backfilled_entry for one of status "backfilled". storedIn is the
// entries file that holds it. The feed's name and labels, which the entry
// does not carry, are the caller's to fill in.
func EventFor(e *Entry, ingestedAt Time, storedIn string) Event {
	typ := TypeNewEntry
	switch e.Status {
	case StatusUpdated:
		typ = TypeUpdatedEntry
	case StatusBackfilled:
		typ = TypeBackfilledEntry
	}
	return Event{
		Header:        Head(typ),
		EntryUID:      e.EntryUID,
		FeedID:        e.FeedID,
		Labels:        []string{},
		Title:         e.Title,
		Summary:       e.Summary,
		CanonicalLink: e.CanonicalLink,
		Published:     e.Published,
		ContentHash:   e.ContentHash,
		RawRefs:       []RawRef{e.RawRef},
		IngestedAt:    ingestedAt,
		StoredIn:      storedIn,
	}
}
