package ndjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"
)

// The records every stage writes by the hundred thousand (entries, fetch
// records, events, decisions) are encoded here by hand rather than by
// encoding/json's reflection, which was 13-21% of feed-parse's,
// feed-dedup's and feed-store's CPU. The output is byte for byte what
// encoding/json writes with SetEscapeHTML(false): TestEncoderMatchesJSON
// fills every field of these types at random and compares, so a field
// added to a struct and not here fails it.

// appendRecord appends the encoding of v to b when v is one of the record
// types encoded by hand. ok is false for any other type, and for a value
// that encoding/json refuses (an invalid json.RawMessage, a NaN), so that
// the caller leaves it to encoding/json, error message and all.
func appendRecord(b []byte, v any) (_ []byte, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if r != errRefused {
				panic(r)
			}
			ok = false
		}
	}()
	switch v := v.(type) {
	case *Entry:
		if v != nil {
			return appendEntry(b, v), true
		}
	case Entry:
		return appendEntry(b, &v), true
	case *Fetch:
		if v != nil {
			return appendFetch(b, v), true
		}
	case Fetch:
		return appendFetch(b, &v), true
	case *Due:
		if v != nil {
			return appendDue(b, v), true
		}
	case Due:
		return appendDue(b, &v), true
	case *Event:
		if v != nil {
			return appendEvent(b, v), true
		}
	case Event:
		return appendEvent(b, &v), true
	case *Decision:
		if v != nil {
			return appendDecision(b, v), true
		}
	case Decision:
		return appendDecision(b, &v), true
	case *FeedEvent:
		if v != nil {
			return appendFeedEvent(b, v), true
		}
	case FeedEvent:
		return appendFeedEvent(b, &v), true
	case *Alias:
		if v != nil {
			return appendAlias(b, v), true
		}
	case Alias:
		return appendAlias(b, &v), true
	case *Media:
		if v != nil {
			return appendMedia(b, v), true
		}
	case Media:
		return appendMedia(b, &v), true
	}
	return b, false
}

// errRefused is the panic of an append function given a value that
// encoding/json refuses, recovered by appendRecord: the values are rare,
// and every other function stays a plain append.
var errRefused = errors.New("ndjson: left to encoding/json")

// Every append function below appends a struct, or one member: its key
// argument is the member's name with its quotes, its colon and, but for
// an object's first member, the comma before it, so that a struct's
// function reads like its definition.

func appendEntry(b []byte, x *Entry) []byte {
	b = appendHeader(append(b, '{'), x.Header)
	b = appendStr(b, `,"entry_uid":`, x.EntryUID)
	b = appendStr(b, `,"feed_id":`, x.FeedID)
	b = appendStr(b, `,"native_id":`, x.NativeID)
	b = appendStr(b, `,"canonical_link":`, x.CanonicalLink)
	b = appendStr(b, `,"title":`, x.Title)
	b = appendStr(b, `,"summary":`, x.Summary)
	b = appendStr(b, `,"content":`, x.Content)
	b = appendList(b, `,"authors":`, x.Authors, appendAuthor)
	b = appendStrs(b, `,"categories":`, x.Categories)
	b = appendList(b, `,"enclosures":`, x.Enclosures, appendEnclosure)
	b = appendTime(b, `,"published":`, x.Published)
	b = appendTime(b, `,"updated":`, x.Updated)
	b = appendStr(b, `,"content_hash":`, x.ContentHash)
	b = appendRawRef(append(b, `,"raw_ref":`...), &x.RawRef)
	if len(x.Derivations) > 0 { // omitempty
		b = appendList(b, `,"derivations":`, x.Derivations, appendDerivation)
	}
	if x.AliasOf != nil { // omitempty
		b = appendEntryRef(append(b, `,"alias_of":`...), x.AliasOf)
	}
	b = appendStr(b, `,"status":`, x.Status)
	b = appendTime(b, `,"first_seen":`, x.FirstSeen)
	b = appendTime(b, `,"last_seen":`, x.LastSeen)
	b = appendInt(b, `,"seen_count":`, x.SeenCount)
	return append(b, '}')
}

func appendAuthor(b []byte, x *Author) []byte {
	b = appendStr(b, `{"name":`, x.Name)
	b = appendStr(b, `,"email":`, x.Email)
	b = appendStr(b, `,"uri":`, x.URI)
	return append(b, '}')
}

func appendEnclosure(b []byte, x *Enclosure) []byte {
	b = appendStr(b, `{"url":`, x.URL)
	b = appendStr(b, `,"type":`, x.Type)
	b = appendInt64(b, `,"length":`, x.Length)
	return append(b, '}')
}

func appendRawRef(b []byte, x *RawRef) []byte {
	b = appendStr(b, `{"fetch_id":`, x.FetchID)
	b = appendInt64(b, `,"offset":`, x.Offset)
	b = appendInt64(b, `,"length":`, x.Length)
	return append(b, '}')
}

func appendDerivation(b []byte, x *Derivation) []byte {
	b = appendStr(b, `{"kind":`, x.Kind)
	b = appendStr(b, `,"extractor":`, x.Extractor)
	b = appendStr(b, `,"version":`, x.Version)
	b = appendList(b, `,"keywords":`, x.Keywords, appendKeyword)
	return append(b, '}')
}

func appendKeyword(b []byte, x *Keyword) []byte {
	b = appendStr(b, `{"term":`, x.Term)
	b = appendFloat(b, `,"score":`, x.Score)
	return append(b, '}')
}

func appendEntryRef(b []byte, x *EntryRef) []byte {
	b = appendStr(b, `{"feed_id":`, x.FeedID)
	b = appendStr(b, `,"entry_uid":`, x.EntryUID)
	return append(b, '}')
}

func appendFetch(b []byte, x *Fetch) []byte {
	b = appendHeader(append(b, '{'), x.Header)
	b = appendStr(b, `,"fetch_id":`, x.FetchID)
	b = appendDue(append(b, `,"due":`...), &x.Due)
	b = appendStr(b, `,"requested_url":`, x.RequestedURL)
	b = appendStr(b, `,"url":`, x.URL)
	b = appendList(b, `,"redirects":`, x.Redirects, appendRedirect)
	b = appendTime(b, `,"fetched_at":`, x.FetchedAt)
	b = appendInt64(b, `,"duration_ms":`, x.DurationMS)
	b = appendInt(b, `,"http_status":`, x.HTTPStatus)
	b = appendBool(b, `,"not_modified":`, x.NotModified)
	b = appendStrMap(b, `,"request_headers":`, x.RequestHeaders)
	b = appendStrMap(b, `,"response_headers":`, x.ResponseHeaders)
	b = appendPtr(b, `,"body_ref":`, x.BodyRef, appendBlobRef)
	b = appendStr(b, `,"body_sha256":`, x.BodySHA256)
	b = appendStr(b, `,"content_type":`, x.ContentType)
	b = appendInt64(b, `,"content_length":`, x.ContentLength)
	b = appendBool(b, `,"truncated":`, x.Truncated)
	b = appendBool(b, `,"unchanged":`, x.Unchanged)
	b = appendInt64(b, `,"bytes_saved":`, x.BytesSaved)
	b = appendInt(b, `,"retry_after_sec":`, x.RetryAfterSec)
	b = appendStr(b, `,"moved_to":`, x.MovedTo)
	b = appendInt(b, `,"moved_count":`, x.MovedCount)
	b = appendStr(b, `,"new_url":`, x.NewURL)
	b = appendPtr(b, `,"error":`, x.Error, appendError)
	b = appendPtr(b, `,"parse":`, x.Parse, appendParse)
	b = appendPtr(b, `,"dedup":`, x.Dedup, appendDedup)
	b = appendPtr(b, `,"scrape":`, x.Scrape, appendScrape)
	b = appendPtr(b, `,"page":`, x.Page, appendPage)
	if x.Origin != "" { // omitempty
		b = appendStr(b, `,"origin":`, x.Origin)
	}
	return append(b, '}')
}

func appendDue(b []byte, x *Due) []byte {
	b = appendHeader(append(b, '{'), x.Header)
	b = appendStr(b, `,"feed_id":`, x.FeedID)
	b = appendStr(b, `,"url":`, x.URL)
	b = appendStr(b, `,"source_type":`, x.SourceType)
	b = appendStr(b, `,"name":`, x.Name)
	b = appendStrs(b, `,"labels":`, x.Labels)
	b = appendTime(b, `,"scheduled_at":`, x.ScheduledAt)
	b = appendStr(b, `,"reason":`, x.Reason)
	b = appendValidators(append(b, `,"validators":`...), &x.Validators)
	b = appendInt(b, `,"item_limit":`, x.ItemLimit)
	b = appendBool(b, `,"fulltext":`, x.Fulltext)
	b = appendRaw(b, `,"scrape":`, x.Scrape)
	b = appendAccess(b, &x.Access) // embedded: its members are the due record's
	b = appendLastFetch(append(b, `,"last":`...), &x.Last)
	if x.Bus != nil { // omitempty
		b = appendBusRef(append(b, `,"bus":`...), x.Bus)
	}
	return append(b, '}')
}

func appendValidators(b []byte, x *Validators) []byte {
	b = appendStr(b, `{"etag":`, x.ETag)
	b = appendStr(b, `,"last_modified":`, x.LastModified)
	return append(b, '}')
}

func appendLastFetch(b []byte, x *LastFetch) []byte {
	b = appendStr(b, `{"body_sha256":`, x.BodySHA256)
	b = appendInt64(b, `,"content_length":`, x.ContentLength)
	b = appendStr(b, `,"moved_to":`, x.MovedTo)
	b = appendInt(b, `,"moved_count":`, x.MovedCount)
	return append(b, '}')
}

// appendAccess appends the members of an embedded Access.
func appendAccess(b []byte, x *Access) []byte {
	b = appendStr(b, `,"user_agent":`, x.UserAgent)
	b = appendStrMap(b, `,"headers":`, x.Headers)
	b = appendPtr(b, `,"auth":`, x.Auth, appendAuth)
	return appendBool(b, `,"allow_private":`, x.AllowPrivate)
}

func appendAuth(b []byte, x *Auth) []byte {
	b = appendStr(b, `{"username":`, x.Username)
	b = appendStr(b, `,"password":`, x.Password)
	return append(b, '}')
}

func appendRedirect(b []byte, x *Redirect) []byte {
	b = appendStr(b, `{"url":`, x.URL)
	b = appendInt(b, `,"status":`, x.Status)
	return append(b, '}')
}

func appendBlobRef(b []byte, x *BlobRef) []byte {
	b = appendStr(b, `{"storage":`, x.Storage)
	b = appendStr(b, `,"key":`, x.Key)
	return append(b, '}')
}

func appendError(b []byte, x *Error) []byte {
	b = appendStr(b, `{"class":`, x.Class)
	b = appendStr(b, `,"code":`, x.Code)
	b = appendStr(b, `,"message":`, x.Message)
	return append(b, '}')
}

func appendParse(b []byte, x *Parse) []byte {
	b = appendStr(b, `{"format":`, x.Format)
	b = appendStr(b, `,"version":`, x.Version)
	b = appendStr(b, `,"charset":`, x.Charset)
	b = appendStr(b, `,"title":`, x.Title)
	b = appendStr(b, `,"link":`, x.Link)
	b = appendStr(b, `,"description":`, x.Description)
	b = appendStr(b, `,"language":`, x.Language)
	b = appendStr(b, `,"image":`, x.Image)
	b = appendStr(b, `,"publisher":`, x.Publisher)
	b = appendStr(b, `,"self":`, x.Self)
	b = appendStrs(b, `,"hubs":`, x.Hubs)
	b = appendStr(b, `,"prev_archive":`, x.PrevArchive)
	b = appendStr(b, `,"next_archive":`, x.NextArchive)
	b = appendStr(b, `,"current":`, x.Current)
	if x.Next != "" { // omitempty
		b = appendStr(b, `,"next":`, x.Next)
	}
	b = appendInt(b, `,"ttl_minutes":`, x.TTLMinutes)
	b = appendInts(b, `,"skip_hours":`, x.SkipHours)
	b = appendStrs(b, `,"skip_days":`, x.SkipDays)
	b = appendInt(b, `,"items":`, x.Items)
	b = appendInt(b, `,"entries":`, x.Entries)
	b = appendTime(b, `,"newest_published":`, x.NewestPublished)
	b = appendTime(b, `,"oldest_published":`, x.OldestPublished)
	b = appendStrs(b, `,"warnings":`, x.Warnings)
	b = appendStr(b, `,"error":`, x.Error)
	return append(b, '}')
}

func appendDedup(b []byte, x *Dedup) []byte {
	b = appendInt(b, `{"new":`, x.New)
	b = appendInt(b, `,"updated":`, x.Updated)
	b = appendInt(b, `,"unchanged":`, x.Unchanged)
	b = appendInt(b, `,"aliases":`, x.Aliases)
	b = appendStrs(b, `,"unchanged_uids":`, x.UnchangedUIDs)
	return append(b, '}')
}

func appendScrape(b []byte, x *Scrape) []byte {
	b = appendStr(b, `{"mode":`, x.Mode)
	b = appendInt(b, `,"pages_fetched":`, x.PagesFetched)
	b = appendInt(b, `,"articles_found":`, x.ArticlesFound)
	b = appendInt(b, `,"known":`, x.Known)
	b = appendInt(b, `,"new":`, x.New)
	b = appendInt(b, `,"rejected":`, x.Rejected)
	b = appendList(b, `,"rejections":`, x.Rejections, appendRejection)
	b = appendInt(b, `,"rejected_before":`, x.RejectedBefore)
	b = appendStr(b, `,"error":`, x.Error)
	return append(b, '}')
}

func appendRejection(b []byte, x *Rejection) []byte {
	b = appendStr(b, `{"url":`, x.URL)
	b = appendStr(b, `,"reason":`, x.Reason)
	b = appendStr(b, `,"message":`, x.Message)
	return append(b, '}')
}

func appendPage(b []byte, x *Page) []byte {
	b = appendStr(b, `{"role":`, x.Role)
	b = appendStr(b, `,"source_fetch_id":`, x.SourceFetchID)
	b = appendStr(b, `,"entry_uid":`, x.EntryUID)
	return append(b, '}')
}

func appendEvent(b []byte, x *Event) []byte {
	b = appendHeader(append(b, '{'), x.Header)
	b = appendStr(b, `,"entry_uid":`, x.EntryUID)
	b = appendStr(b, `,"feed_id":`, x.FeedID)
	b = appendStr(b, `,"feed_name":`, x.FeedName)
	b = appendStrs(b, `,"labels":`, x.Labels)
	b = appendStr(b, `,"title":`, x.Title)
	b = appendStr(b, `,"summary":`, x.Summary)
	b = appendStr(b, `,"canonical_link":`, x.CanonicalLink)
	b = appendTime(b, `,"published":`, x.Published)
	b = appendStr(b, `,"content_hash":`, x.ContentHash)
	b = appendList(b, `,"raw_refs":`, x.RawRefs, appendRawRef)
	b = appendTime(b, `,"ingested_at":`, x.IngestedAt)
	b = appendStr(b, `,"stored_in":`, x.StoredIn)
	return append(b, '}')
}

func appendAlias(b []byte, x *Alias) []byte {
	b = appendHeader(append(b, '{'), x.Header)
	b = appendStr(b, `,"feed_id":`, x.FeedID)
	b = appendStr(b, `,"entry_uid":`, x.EntryUID)
	b = appendStr(b, `,"canonical_link":`, x.CanonicalLink)
	b = appendStr(b, `,"title":`, x.Title)
	b = appendTime(b, `,"published":`, x.Published)
	b = appendStr(b, `,"content_hash":`, x.ContentHash)
	b = appendRawRef(append(b, `,"raw_ref":`...), &x.RawRef)
	b = appendEntryRef(append(b, `,"alias_of":`...), &x.AliasOf)
	b = appendTime(b, `,"recorded_at":`, x.RecordedAt)
	b = appendStr(b, `,"stored_in":`, x.StoredIn)
	return append(b, '}')
}

func appendMedia(b []byte, x *Media) []byte {
	b = appendHeader(append(b, '{'), x.Header)
	b = appendStr(b, `,"feed_id":`, x.FeedID)
	b = appendStr(b, `,"entry_uid":`, x.EntryUID)
	b = appendStr(b, `,"kind":`, x.Kind)
	b = appendStr(b, `,"url":`, x.URL)
	b = appendStr(b, `,"final_url":`, x.FinalURL)
	b = appendStr(b, `,"status":`, x.Status)
	b = appendStr(b, `,"reason":`, x.Reason)
	b = appendStr(b, `,"message":`, x.Message)
	b = appendInt(b, `,"http_status":`, x.HTTPStatus)
	b = appendStr(b, `,"key":`, x.Key)
	b = appendStr(b, `,"sha256":`, x.SHA256)
	b = appendInt64(b, `,"bytes":`, x.Bytes)
	b = appendStr(b, `,"content_type":`, x.ContentType)
	b = appendInt64(b, `,"resumed_from":`, x.ResumedFrom)
	b = appendBool(b, `,"restarted":`, x.Restarted)
	b = appendInt(b, `,"attempt":`, x.Attempt)
	b = appendTime(b, `,"started_at":`, x.StartedAt)
	b = appendTime(b, `,"at":`, x.At)
	b = appendInt64(b, `,"duration_ms":`, x.DurationMS)
	b = appendStr(b, `,"stored_in":`, x.StoredIn)
	return append(b, '}')
}

func appendDecision(b []byte, x *Decision) []byte {
	b = appendHeader(append(b, '{'), x.Header)
	b = appendStr(b, `,"feed_id":`, x.FeedID)
	b = appendStr(b, `,"fetch_id":`, x.FetchID)
	b = appendStr(b, `,"decision":`, x.Decision)
	b = appendStr(b, `,"reason":`, x.Reason)
	b = appendTime(b, `,"at":`, x.At)
	b = appendTime(b, `,"next_at":`, x.NextAt)
	b = appendTime(b, `,"until":`, x.Until)
	b = appendStr(b, `,"state":`, x.State)
	b = appendStr(b, `,"event":`, x.Event)
	b = appendStr(b, `,"disabled_reason":`, x.DisabledReason)
	b = appendDecisionInputs(append(b, `,"inputs":`...), &x.Inputs)
	return append(b, '}')
}

func appendDecisionInputs(b []byte, x *DecisionInputs) []byte {
	b = appendStr(b, `{"policy":`, x.Policy)
	b = appendStr(b, `,"override":`, x.Override)
	b = appendStr(b, `,"outcome":`, x.Outcome)
	b = appendInt(b, `,"http_status":`, x.HTTPStatus)
	b = appendBool(b, `,"not_modified":`, x.NotModified)
	b = appendBool(b, `,"truncated":`, x.Truncated)
	b = appendStr(b, `,"error_class":`, x.ErrorClass)
	b = appendStr(b, `,"error_code":`, x.ErrorCode)
	b = appendInt(b, `,"new_entries":`, x.NewEntries)
	b = appendInt(b, `,"items":`, x.Items)
	b = appendInt(b, `,"interval_before_sec":`, x.IntervalBeforeSec)
	b = appendInt(b, `,"interval_after_sec":`, x.IntervalAfterSec)
	b = appendInt(b, `,"min_sec":`, x.MinSec)
	b = appendInt(b, `,"max_sec":`, x.MaxSec)
	b = appendFloat(b, `,"ewma_secs":`, x.EWMASecs)
	b = appendFloat(b, `,"rate_per_day":`, x.RatePerDay)
	b = appendFloat(b, `,"scale":`, x.Scale)
	b = appendInt(b, `,"base_sec":`, x.BaseSec)
	b = appendFloat(b, `,"profile_factor":`, x.ProfileFactor)
	b = appendInt(b, `,"tail_cap_sec":`, x.TailCapSec)
	b = appendInt(b, `,"window_cap_sec":`, x.WindowCapSec)
	b = appendFloat(b, `,"pattern_gain":`, x.PatternGain)
	b = appendStr(b, `,"pattern_hours":`, x.PatternHours)
	b = appendStr(b, `,"pattern_days":`, x.PatternDays)
	b = appendInt(b, `,"day_start":`, x.DayStart)
	b = appendFloat(b, `,"poll_weight":`, x.PollWeight)
	b = appendStr(b, `,"slot":`, x.Slot)
	b = appendStr(b, `,"cron_next_at":`, x.CronNextAt)
	b = appendStr(b, `,"cron_error":`, x.CronError)
	b = appendInt(b, `,"ttl_sec":`, x.TTLSec)
	b = appendInt(b, `,"max_age_sec":`, x.MaxAgeSec)
	b = appendInt(b, `,"floor_sec":`, x.FloorSec)
	b = appendInt(b, `,"retry_after_secs":`, x.RetryAfterSecs)
	b = appendInts(b, `,"skip_hours":`, x.SkipHours)
	b = appendStrs(b, `,"skip_days":`, x.SkipDays)
	b = appendTime(b, `,"skip_moved_from":`, x.SkipMovedFrom)
	b = appendBool(b, `,"skip_ignored":`, x.SkipIgnored)
	b = appendInt(b, `,"backoff_step":`, x.BackoffStep)
	b = appendInt(b, `,"backoff_sec":`, x.BackoffSec)
	b = appendInt(b, `,"jitter_sec":`, x.JitterSec)
	b = appendInt(b, `,"consecutive_failures":`, x.ConsecutiveFailures)
	b = appendFloat(b, `,"error_budget":`, x.ErrorBudget)
	b = appendFloat(b, `,"error_budget_size":`, x.ErrorBudgetSize)
	b = appendBool(b, `,"probe":`, x.Probe)
	return append(b, '}')
}

func appendFeedEvent(b []byte, x *FeedEvent) []byte {
	b = appendHeader(append(b, '{'), x.Header)
	b = appendStr(b, `,"feed_id":`, x.FeedID)
	b = appendStr(b, `,"fetch_id":`, x.FetchID)
	b = appendStr(b, `,"url":`, x.URL)
	b = appendTime(b, `,"at":`, x.At)
	b = appendStr(b, `,"disabled_reason":`, x.DisabledReason)
	b = appendPtr(b, `,"error":`, x.Error, appendError)
	b = appendTime(b, `,"next_at":`, x.NextAt)
	return append(b, '}')
}

// appendHeader appends the members of an embedded Header: the first ones.
func appendHeader(b []byte, h Header) []byte {
	b = appendStr(b, `"type":`, h.Type)
	return appendInt(b, `,"v":`, h.V)
}

// The members' values, after their key. Nil slices, maps and pointers are
// null, as encoding/json writes them.

func appendStr(b []byte, key, s string) []byte {
	return appendString(append(b, key...), s)
}

func appendInt(b []byte, key string, n int) []byte {
	return strconv.AppendInt(append(b, key...), int64(n), 10)
}

func appendInt64(b []byte, key string, n int64) []byte {
	return strconv.AppendInt(append(b, key...), n, 10)
}

func appendBool(b []byte, key string, v bool) []byte {
	return strconv.AppendBool(append(b, key...), v)
}

func appendTime(b []byte, key string, t Time) []byte {
	return t.appendJSON(append(b, key...))
}

// appendFloat appends f as encoding/json does (as JavaScript prints a
// number): the shortest decimal that reads back as f, in exponent form
// below 1e-6 and from 1e21, whose exponent has no leading zero. NaN and
// infinities have no JSON form: the record is refused.
func appendFloat(b []byte, key string, f float64) []byte {
	b = append(b, key...)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		panic(errRefused)
	}
	if abs := math.Abs(f); abs == 0 || abs >= 1e-6 && abs < 1e21 {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	b = strconv.AppendFloat(b, f, 'e', -1, 64)
	if n := len(b); b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-07 -> e-7; a positive exponent here has two digits
		b = b[:n-1]
	}
	return b
}

func appendStrs(b []byte, key string, s []string) []byte {
	b = append(b, key...)
	if s == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, v)
	}
	return append(b, ']')
}

func appendInts(b []byte, key string, s []int) []byte {
	b = append(b, key...)
	if s == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(v), 10)
	}
	return append(b, ']')
}

// appendStrMap appends m with its keys in byte order, as encoding/json
// sorts them.
func appendStrMap(b []byte, key string, m map[string]string) []byte {
	b = append(b, key...)
	if m == nil {
		return append(b, "null"...)
	}
	var arr [32]string // most header maps fit: no allocation
	keys := arr[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendString(b, k), ':')
		b = appendString(b, m[k])
	}
	return append(b, '}')
}

// appendRaw appends m compacted, as encoding/json writes a
// json.RawMessage; one that is not valid JSON (an empty one included)
// refuses the record.
func appendRaw(b []byte, key string, m json.RawMessage) []byte {
	b = append(b, key...)
	if m == nil || string(m) == "null" { // as a record decodes it: no scan
		return append(b, "null"...)
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, m); err != nil {
		panic(errRefused)
	}
	return buf.Bytes()
}

// appendList appends s, whose elements elem appends.
func appendList[T any](b []byte, key string, s []T, elem func([]byte, *T) []byte) []byte {
	b = append(b, key...)
	if s == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = elem(b, &s[i])
	}
	return append(b, ']')
}

// appendPtr appends what p points at, which elem appends, or null.
func appendPtr[T any](b []byte, key string, p *T, elem func([]byte, *T) []byte) []byte {
	b = append(b, key...)
	if p == nil {
		return append(b, "null"...)
	}
	return elem(b, p)
}

// appendString appends s as a JSON string the way encoding/json writes it
// with HTML escaping off: '"', '\\' and control characters escaped
// (\b \f \n \r \t by name, the others as \u00XX), every byte that is not
// part of valid UTF-8 replaced by \ufffd, and U+2028 and U+2029 escaped,
// since JavaScript reads them as line ends. Everything else, <, > and &
// among it, is copied as it is. FuzzAppendString holds it to
// encoding/json.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0 // s[start:i] is copied when an escape or the end is reached
	for i := 0; i < len(s); {
		if i = plainEnd(s, i); i == len(s) {
			break
		}
		b = append(b, s[start:i]...)
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
			i++
		case c == '\b':
			b = append(b, '\\', 'b')
			i++
		case c == '\f':
			b = append(b, '\\', 'f')
			i++
		case c == '\n':
			b = append(b, '\\', 'n')
			i++
		case c == '\r':
			b = append(b, '\\', 'r')
			i++
		case c == '\t':
			b = append(b, '\\', 't')
			i++
		case c < ' ':
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			i++
		case c == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9):
			b = append(b, '\\', 'u', '2', '0', '2', hex[s[i+2]&0xf])
			i += 3
		default: // a byte that begins no valid UTF-8 sequence
			b = append(b, `\ufffd`...)
			i++
		}
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// plainEnd is where the text copied as it is ends from s[i]: the next
// byte that needs an escape, or len(s). Eight bytes at a time: plain
// ASCII is skipped, and otherwise the first byte that is not (plainMask
// finds it) is looked at, a character copied whole when it is valid
// UTF-8 (validUTF8At), and the eight bytes after it tried next. Fewer
// than eight left are looked at in the eight that end s, those before i
// (plain, or copied already) taken for letters, rather than one by one.
func plainEnd(s string, i int) int {
	const ones = 0x0101010101010101
	for i+8 <= len(s) {
		m := plainMask(load8(s[i:]))
		if m == 0 {
			i += 8
			continue
		}
		i += bits.TrailingZeros64(m) >> 3
		c := s[i]
		if c < utf8.RuneSelf {
			return i
		}
		// Two-byte characters, and the three-byte ones of E3-EC (Chinese,
		// Japanese), are read here; the others (and E2, which begins
		// U+2028 and U+2029) by validUTF8At.
		if c >= 0xC2 && c < 0xE0 && i+1 < len(s) && s[i+1]&0xC0 == 0x80 {
			i += 2
			continue
		}
		if c >= 0xE3 && c < 0xED && i+2 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 {
			i += 3
			continue
		}
		n := validUTF8At(s, i)
		if n == 0 {
			return i
		}
		i += n
	}
	if len(s) >= 8 {
		for i < len(s) {
			j := len(s) - 8
			keep := ^uint64(0) << (8 * uint(i-j)) // the bytes from i on
			m := plainMask(load8(s[j:])&keep | ones*'a'&^keep)
			if m == 0 {
				return len(s)
			}
			i = j + bits.TrailingZeros64(m)>>3
			if s[i] < utf8.RuneSelf {
				return i
			}
			n := validUTF8At(s, i)
			if n == 0 {
				return i
			}
			i += n
		}
		return len(s)
	}
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if c < ' ' || c == '"' || c == '\\' {
				return i
			}
			i++
		} else if n := validUTF8At(s, i); n > 0 {
			i += n
		} else {
			return i
		}
	}
	return len(s)
}

// validUTF8At is the length of the valid UTF-8 character at s[i] (whose
// byte is not ASCII), or 0 when there is none or it is U+2028 or U+2029,
// which are escaped: the ranges of the Unicode standard's table 3-7, as
// utf8.DecodeRuneInString reads them, without its call.
func validUTF8At(s string, i int) int {
	c := s[i]
	switch {
	case c < 0xC2:
		return 0
	case c < 0xE0:
		if i+1 < len(s) && s[i+1]&0xC0 == 0x80 {
			return 2
		}
		return 0
	case c < 0xF0:
		if i+2 >= len(s) || s[i+2]&0xC0 != 0x80 {
			return 0
		}
		c1 := s[i+1]
		switch c {
		case 0xE0:
			if c1 < 0xA0 || c1 > 0xBF {
				return 0
			}
		case 0xE2:
			if c1 == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9) {
				return 0
			}
			if c1&0xC0 != 0x80 {
				return 0
			}
		case 0xED:
			if c1 < 0x80 || c1 > 0x9F {
				return 0
			}
		default:
			if c1&0xC0 != 0x80 {
				return 0
			}
		}
		return 3
	case c < 0xF5:
		if i+3 >= len(s) || s[i+2]&0xC0 != 0x80 || s[i+3]&0xC0 != 0x80 {
			return 0
		}
		c1 := s[i+1]
		switch c {
		case 0xF0:
			if c1 < 0x90 || c1 > 0xBF {
				return 0
			}
		case 0xF4:
			if c1 < 0x80 || c1 > 0x8F {
				return 0
			}
		default:
			if c1&0xC0 != 0x80 {
				return 0
			}
		}
		return 4
	}
	return 0
}

// load8 is the first eight bytes of s as a little-endian number.
func load8(s string) uint64 {
	_ = s[7] // one bounds check for the eight
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// plainMask marks with their high bit the bytes of x's eight that are
// not copied as they are: not ASCII, control characters, '"' and '\\'.
// It tests the eight at once: the high bit of a byte of x is set when the
// byte is not ASCII; of x - n*ones, when the byte is below n; and a byte
// equal to c is below 1 in x^(c*ones). A borrow can mark more, but only
// above a byte marked already: the lowest mark is exact.
func plainMask(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	return (x | (x - ones*' ') | (x ^ (ones * '"') - ones) | (x ^ (ones * '\\') - ones)) & highs
}
