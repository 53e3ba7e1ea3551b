package serve

import (
	"errors"
	"net/url"
	"strconv"
	"strings"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The names of the Google Reader API: item ids, stream ids, and the
// forms its clients send. Every one comes from the network and is read
// here, checked against its exact shape, before anything uses it.

// An item id is the entry's uid (16 hex digits: stable across reparse,
// replay and reindex), in the long form
// tag:google.com,2005:reader/item/<16 hex> or the short form, the same 64
// bits as a signed decimal (as Google gave them; an unsigned one is taken
// too).
const itemPrefix = "tag:google.com,2005:reader/item/"

// itemLong is the long form of an entry uid.
func itemLong(uid string) string { return itemPrefix + uid }

// itemShort is the short (decimal) form of an entry uid.
func itemShort(uid string) string {
	n, _ := strconv.ParseUint(uid, 16, 64)
	return strconv.FormatInt(int64(n), 10)
}

var errItemID = errors.New("not an item id: tag:google.com,2005:reader/item/ and 16 hex digits, or that number in decimal")

// parseItemID reads an item id in either form, and returns the entry uid.
func parseItemID(s string) (string, error) {
	if hex, ok := strings.CutPrefix(s, itemPrefix); ok {
		if len(hex) != 16 {
			return "", errItemID
		}
		hex = strings.ToLower(hex)
		if !ndjson.IsEntryUID(hex) {
			return "", errItemID
		}
		return hex, nil
	}
	if s == "" || len(s) > 20 {
		return "", errItemID
	}
	var n uint64
	if s[0] == '-' {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v >= 0 {
			return "", errItemID
		}
		n = uint64(v)
	} else {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil || s[0] == '+' || (len(s) > 1 && s[0] == '0') {
			return "", errItemID
		}
		n = v
	}
	uid := strconv.FormatUint(n, 16)
	return strings.Repeat("0", 16-len(uid)) + uid, nil
}

// Stream kinds.
const (
	streamReadingList = "reading-list"
	streamStarred     = "starred"
	streamRead        = "read"
	streamFeed        = "feed"
	streamLabel       = "label"
)

// The state streams, in the form the API gives them.
const (
	stateReadingList = "user/-/state/com.google/reading-list"
	stateStarred     = "user/-/state/com.google/starred"
	stateRead        = "user/-/state/com.google/read"
	stateKeptUnread  = "user/-/state/com.google/kept-unread"
	stateFresh       = "user/-/state/com.google/fresh"
)

// stream is a stream id, read: a state of the user's, a feed, or a label.
type stream struct {
	Kind string
	// Feed is a feed id, or the URL the stream named it by
	// (feed/http://...); Label a label.
	Feed, Label string
}

// id is the stream's id as the API gives it.
func (s stream) id() string {
	switch s.Kind {
	case streamFeed:
		return "feed/" + s.Feed
	case streamLabel:
		return labelStream(s.Label)
	}
	return "user/-/state/com.google/" + s.Kind
}

func labelStream(label string) string { return "user/-/label/" + label }

var errStreamID = errors.New("not a stream id: feed/FEED, user/-/label/LABEL or user/-/state/com.google/(reading-list|starred|read)")

// parseStream reads a stream id. user names the user: "user/-/" and
// "user/NAME/" are theirs, another user's are not.
func parseStream(s, user string) (stream, error) {
	if len(s) > 2048 || strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return stream{}, errStreamID
	}
	if rest, ok := strings.CutPrefix(s, "feed/"); ok {
		if ndjson.IsFeedID(rest) {
			return stream{Kind: streamFeed, Feed: rest}, nil
		}
		if u, err := url.Parse(rest); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
			return stream{Kind: streamFeed, Feed: rest}, nil
		}
		return stream{}, errStreamID
	}
	rest, ok := strings.CutPrefix(s, "user/")
	if !ok {
		return stream{}, errStreamID
	}
	who, rest, ok := strings.Cut(rest, "/")
	if !ok || (who != "-" && who != user) {
		return stream{}, errStreamID
	}
	if label, ok := strings.CutPrefix(rest, "label/"); ok {
		if labelProblem(label) != "" {
			return stream{}, errStreamID
		}
		return stream{Kind: streamLabel, Label: label}, nil
	}
	switch rest {
	case "state/com.google/reading-list":
		return stream{Kind: streamReadingList}, nil
	case "state/com.google/starred":
		return stream{Kind: streamStarred}, nil
	case "state/com.google/read":
		return stream{Kind: streamRead}, nil
	}
	return stream{}, errStreamID
}

// labelName reads a label as subscription/edit's a= and r= give it: a
// label stream id, or (as some clients send) the bare name.
func labelName(s, user string) (string, bool) {
	if strings.HasPrefix(s, "user/") {
		st, err := parseStream(s, user)
		return st.Label, err == nil && st.Kind == streamLabel
	}
	return s, labelProblem(s) == ""
}

// greaderForm is a request's parameters, from its query and its form
// body alike (clients put them in either).
type greaderForm url.Values

// Limits of a form.
const (
	maxFormItems = 1000 // i= of one request
	maxFormBytes = 1 << 20
)

var errFormTooMany = errors.New("too many values")

// parseGreaderForm reads a request's query and its
// application/x-www-form-urlencoded body (at most maxFormBytes), body
// values first. Any parameter given more than maxFormItems times is
// refused.
func parseGreaderForm(query, body string) (greaderForm, error) {
	if len(body) > maxFormBytes {
		return nil, errFormTooMany
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, err
	}
	b, err := url.ParseQuery(body)
	if err != nil {
		return nil, err
	}
	for k, vs := range q {
		b[k] = append(b[k], vs...)
	}
	for _, vs := range b {
		if len(vs) > maxFormItems {
			return nil, errFormTooMany
		}
	}
	return greaderForm(b), nil
}

func (f greaderForm) get(k string) string {
	if vs := f[k]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}
