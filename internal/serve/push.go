package serve

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/safetext"
	"github.com/feedpipe/feedpipe/internal/spool"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/sub"
	"github.com/feedpipe/feedpipe/internal/websub"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Push (docs/design.md#push): feed-serve is the WebSub subscriber's
// callback (W3C WebSub §5.2, §5.3, §7) and the webhook sources' endpoint.
// It answers a hub's verification of intent only for a subscription feed-sub
// push sync asked for, records denials, and takes a pushed body only when
// it is signed with the subscription's or the source's secret and within
// the cap of a fetched body. A body taken goes into the raw store and its
// fetch record into the spool (internal/spool), which the next feed-fetch
// hands on down the pipeline: feed-loop runs one at once when the spool
// has records. feed-serve never writes the taps itself: the pipeline's
// writer holds them.

// MaxPushBytes caps a pushed body: the cap of a fetched one
// (docs/design.md#fetching), as a distribution may be a whole feed.
const MaxPushBytes = httpx.DefaultMaxBodyBytes

// The prefixes of the push routes' paths (feed-sub push sync makes the
// callbacks under the first).
const (
	WebSubPath  = sub.WebSubPath
	WebhookPath = sub.WebhookPath
)

// pushMetrics count what the push routes did.
type pushMetrics struct {
	// bodies: pushed bodies by origin (websub, webhook) and result:
	// accepted, empty, bad_signature, too_large, wrong_type, disabled,
	// unknown (no such callback or source), error.
	bodies *prometheus.CounterVec
	// verifications: a hub's requests at a callback by mode (subscribe,
	// unsubscribe, denied) and result: confirmed, refused (404).
	verifications *prometheus.CounterVec
}

func newPushMetrics(reg *prometheus.Registry) (*pushMetrics, error) {
	m := &pushMetrics{
		bodies: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "feedpipe_push_bodies_total",
			Help: "Bodies pushed to feed-serve (WebSub distributions, webhook POSTs), by origin and result: accepted, or why not."}, []string{"origin", "result"}),
		verifications: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "feedpipe_websub_verifications_total",
			Help: "A WebSub hub's requests at a callback, by mode (subscribe, unsubscribe, denied) and result (confirmed, refused)."}, []string{"mode", "result"}),
	}
	for _, c := range []prometheus.Collector{m.bodies, m.verifications} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// hubRequest is a hub's GET at a callback: a verification of intent
// (§5.3) or a denial (§5.2).
type hubRequest struct {
	Mode, Topic, Challenge, Reason string
	Lease                          time.Duration // 0: not given
}

// Limits of what a hub's request may hold.
const (
	maxTopic     = 2048
	maxChallenge = 1024
	maxReason    = 500
	maxLease     = 10 * 365 * 24 * time.Hour
)

// errHubRequest is a hub's request feed-serve cannot read.
var errHubRequest = errors.New("not a hub's request")

// parseHubQuery reads a hub's request from the callback's query: hub.mode
// subscribe or unsubscribe with hub.topic and hub.challenge (and, for
// subscribe, hub.lease_seconds), or denied with hub.topic (and
// hub.reason). The challenge is echoed back, so it must be printable
// text of a sane length; a reason is one line without control
// characters.
func parseHubQuery(q url.Values) (hubRequest, error) {
	h := hubRequest{Mode: q.Get("hub.mode"), Topic: q.Get("hub.topic"), Challenge: q.Get("hub.challenge")}
	fail := func(why string) (hubRequest, error) { return hubRequest{}, fmt.Errorf("%w: %s", errHubRequest, why) }
	if h.Topic == "" || len(h.Topic) > maxTopic || !utf8.ValidString(h.Topic) {
		return fail("hub.topic is missing or too long")
	}
	if u, err := url.Parse(h.Topic); err != nil || !u.IsAbs() {
		return fail("hub.topic is not an absolute URL")
	}
	switch h.Mode {
	case websub.ModeSubscribe, websub.ModeUnsubscribe:
		if h.Challenge == "" || len(h.Challenge) > maxChallenge || strings.IndexFunc(h.Challenge, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
			return fail("hub.challenge is missing, too long, or not printable ASCII")
		}
		if v := q.Get("hub.lease_seconds"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 || time.Duration(n) > maxLease/time.Second {
				return fail("hub.lease_seconds is not a number of seconds")
			}
			h.Lease = time.Duration(n) * time.Second
		}
	case websub.ModeDenied:
		h.Challenge = ""
		r := strings.Join(strings.Fields(safetext.StripControls(strings.ToValidUTF8(q.Get("hub.reason"), "\uFFFD"))), " ")
		if len(r) > maxReason {
			r = strings.ToValidUTF8(r[:maxReason], "")
		}
		h.Reason = r
	default:
		return fail("hub.mode is not subscribe, unsubscribe or denied")
	}
	return h, nil
}

// callbackID reports whether id has the shape of a callback's id.
func callbackID(id string) bool {
	return len(id) == 32 && strings.IndexFunc(id, func(r rune) bool { return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') }) < 0
}

// websubVerify is GET /websub/{id}: a hub verifies our intent (§5.3) or
// denies a subscription (§5.2). Anything but a subscription we asked for,
// of that topic and mode, gets 404.
func (s *Server) websubVerify(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	h, err := parseHubQuery(r.URL.Query())
	mode := h.Mode
	if err != nil || !callbackID(id) {
		s.push.verifications.WithLabelValues("none", "refused").Inc()
		problem(w, r, http.StatusNotFound, "no such subscription", "this callback has no subscription of that topic and mode to confirm")
		return
	}
	now := s.cfg.Now()
	if mode == websub.ModeDenied {
		ok, err := s.cat.DenyWebSub(r.Context(), id, h.Topic, h.Reason, now)
		if err != nil {
			s.serverError(w, r, err)
			return
		}
		if !ok {
			s.push.verifications.WithLabelValues(mode, "refused").Inc()
			problem(w, r, http.StatusNotFound, "no such subscription", "this callback has no subscription of that topic")
			return
		}
		s.push.verifications.WithLabelValues(mode, "confirmed").Inc()
		s.cfg.Log.Warn("a hub denied a WebSub subscription", "topic", h.Topic, "reason", h.Reason)
		w.WriteHeader(http.StatusOK)
		return
	}
	v, err := s.cat.VerifyWebSub(r.Context(), id, mode, h.Topic, h.Lease, now)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	if v == catalog.VerifyUnknown {
		s.push.verifications.WithLabelValues(mode, "refused").Inc()
		s.cfg.Log.Warn("refused a WebSub verification for no subscription of ours", "mode", mode, "topic", h.Topic)
		problem(w, r, http.StatusNotFound, "no such subscription", "this callback has no subscription of that topic and mode to confirm")
		return
	}
	s.push.verifications.WithLabelValues(mode, "confirmed").Inc()
	s.cfg.Log.Info("confirmed a WebSub "+mode, "topic", h.Topic, "lease_sec", int(h.Lease/time.Second))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, h.Challenge)
}

// readPush reads a pushed body, within MaxPushBytes (the route's policy
// caps it), or answers the request itself, 413 or 400, counted, and says
// not ok. what names the body in the 413.
func readPush(w http.ResponseWriter, r *http.Request, m *pushMetrics, origin, what string) (body []byte, ok bool) {
	body, err := io.ReadAll(r.Body)
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &mb):
		m.bodies.WithLabelValues(origin, "too_large").Inc()
		problem(w, r, http.StatusRequestEntityTooLarge, "body too large", fmt.Sprintf("%s is %d bytes at most", what, MaxPushBytes))
		return nil, false
	case err != nil:
		m.bodies.WithLabelValues(origin, "error").Inc()
		problem(w, r, http.StatusBadRequest, "body not read", "the body could not be read: "+err.Error())
		return nil, false
	}
	return body, true
}

// websubDistribute is POST /websub/{id}: a hub's content distribution
// (§7). A callback of no subscription of ours, or of one being ended, or
// of a feed no longer followed, gets 410 Gone (the hub may then end the
// subscription, §7); a body over the cap 413; a body without its
// subscription's signature is ignored and answered 202 all the same, as
// §7.1.2 allows (a 2xx tells no one whether a forged signature was
// right); a body taken 202.
func (s *Server) websubDistribute(w http.ResponseWriter, r *http.Request) {
	const origin = ndjson.OriginWebSub
	id := r.PathValue("id")
	var sub catalog.WebSub
	ok := false
	if callbackID(id) {
		var err error
		if sub, ok, err = s.cat.WebSubByCallback(r.Context(), id); err != nil {
			s.serverError(w, r, err)
			return
		}
	}
	if !ok || sub.Mode != websub.ModeSubscribe {
		s.push.bodies.WithLabelValues(origin, "unknown").Inc()
		problem(w, r, http.StatusGone, "no such subscription", "this callback has no subscription: it may end")
		return
	}
	body, ok := readPush(w, r, s.push, origin, "a distributed body")
	if !ok {
		return
	}
	if err := websub.Verify(r.Header.Get("X-Hub-Signature"), body, []byte(sub.Secret)); err != nil {
		s.push.bodies.WithLabelValues(origin, "bad_signature").Inc()
		s.cfg.Log.Warn("ignored a WebSub distribution: its signature is not the subscription's", "feed_id", sub.FeedID, "err", err)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	fs, found, err := s.cat.Subscription(r.Context(), sub.FeedID)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	if !found || fs.Disabled || fs.Push == ndjson.PushOff {
		s.push.bodies.WithLabelValues(origin, "disabled").Inc()
		problem(w, r, http.StatusGone, "not followed", "the feed of this subscription is no longer followed by push: the subscription may end")
		return
	}
	if len(body) == 0 {
		s.push.bodies.WithLabelValues(origin, "empty").Inc()
		w.WriteHeader(http.StatusAccepted)
		return
	}
	_, self := websub.Links(r.Header.Values("Link"), nil)
	if self == "" {
		self = sub.Topic
	}
	if _, err := s.takePush(r, origin, fs, self, body); err != nil {
		s.push.bodies.WithLabelValues(origin, "error").Inc()
		s.serverError(w, r, err)
		return
	}
	s.push.bodies.WithLabelValues(origin, "accepted").Inc()
	w.WriteHeader(http.StatusAccepted)
}

// webhookTypes are the media types a webhook source takes: feeds (RSS,
// Atom, JSON Feed, and XML or JSON as they are often served) and NDJSON
// entry records.
var webhookTypes = []string{"application/rss+xml", "application/atom+xml", "application/rdf+xml", "application/xml", "text/xml",
	"application/feed+json", "application/json", "application/x-ndjson", "application/ndjson", "application/jsonl"}

// webhookPost is POST /webhooks/{id}: a webhook source's content. The
// body must be signed: X-Hub-Signature-256 (or X-Hub-Signature) holding
// sha256=HEX, the HMAC-SHA256 of the body under the source's secret
// (docs/design.md#push says why HMAC rather than a bearer token). No
// such source 404, over the cap 413, a bad signature 401, a disabled
// source 403, a type it does not take 415: nothing is stored, and each is
// counted. A body taken answers 202 with its fetch_id.
func (s *Server) webhookPost(w http.ResponseWriter, r *http.Request) {
	const origin = ndjson.OriginWebhook
	id := r.PathValue("id")
	var sub ndjson.Subscription
	found := false
	if ndjson.IsFeedID(id) {
		var err error
		if sub, found, err = s.cat.Subscription(r.Context(), id); err != nil {
			s.serverError(w, r, err)
			return
		}
	}
	if !found || sub.SourceType != ndjson.SourceWebhook || sub.WebhookSecret == "" {
		s.push.bodies.WithLabelValues(origin, "unknown").Inc()
		problem(w, r, http.StatusNotFound, "no such webhook source", "no webhook source has this id (feed-sub add --type webhook NAME makes one)")
		return
	}
	body, ok := readPush(w, r, s.push, origin, "a webhook body")
	if !ok {
		return
	}
	sig := r.Header.Get("X-Hub-Signature-256")
	if sig == "" {
		sig = r.Header.Get("X-Hub-Signature")
	}
	if err := websub.Verify(sig, body, []byte(sub.WebhookSecret)); err != nil || !strings.HasPrefix(strings.ToLower(sig), "sha256=") {
		s.push.bodies.WithLabelValues(origin, "bad_signature").Inc()
		w.Header().Set("WWW-Authenticate", `HMAC-SHA256 header="X-Hub-Signature-256"`)
		problem(w, r, http.StatusUnauthorized, "bad signature",
			"sign the body: X-Hub-Signature-256: sha256=HEX, the HMAC-SHA256 of the body under the source's secret")
		return
	}
	if sub.Disabled {
		s.push.bodies.WithLabelValues(origin, "disabled").Inc()
		problem(w, r, http.StatusForbidden, "source disabled", "this webhook source is disabled: feed-sub enable puts it back")
		return
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !slices.Contains(webhookTypes, mt) {
		s.push.bodies.WithLabelValues(origin, "wrong_type").Inc()
		problem(w, r, http.StatusUnsupportedMediaType, "unsupported type",
			"a webhook body is a feed (RSS, Atom, JSON Feed) or NDJSON entry records: Content-Type one of "+strings.Join(webhookTypes, ", "))
		return
	}
	if len(body) == 0 {
		s.push.bodies.WithLabelValues(origin, "empty").Inc()
		problem(w, r, http.StatusBadRequest, "empty body", "the body is empty: nothing to store")
		return
	}
	fetchID, err := s.takePush(r, origin, sub, sub.URL, body)
	if err != nil {
		s.push.bodies.WithLabelValues(origin, "error").Inc()
		s.serverError(w, r, err)
		return
	}
	s.push.bodies.WithLabelValues(origin, "accepted").Inc()
	s.sendJSON(w, r, http.StatusAccepted, map[string]string{"fetch_id": fetchID}, time.Time{})
}

// pushHeadersDropped are the request headers a pushed body's fetch record
// leaves out: secrets, and the signature.
var pushHeadersDropped = []string{"Authorization", "Cookie", "X-Hub-Signature", "X-Hub-Signature-256"}

// takePush keeps a pushed body of the feed of sub: the payload in the raw
// store, then its fetch record in the spool (pkg/ndjson's doc, "fetch"),
// then the push counted in the catalog. It returns the fetch id.
func (s *Server) takePush(r *http.Request, origin string, sub ndjson.Subscription, topic string, body []byte) (string, error) {
	now := s.cfg.Now()
	id, err := ids.FetchID(now, rand.Reader)
	if err != nil {
		return "", err
	}
	key, sum, err := s.cfg.Store.PutRaw(now, body)
	if err != nil {
		return "", err
	}
	h := r.Header.Clone()
	for _, k := range pushHeadersDropped {
		h.Del(k)
	}
	f := &ndjson.Fetch{
		Header:  ndjson.Head(ndjson.TypeFetch),
		FetchID: id,
		Origin:  origin,
		Due: ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: sub.FeedID, URL: sub.URL, SourceType: sub.SourceType, Name: sub.Name,
			Labels: ndjson.NonNil(sub.Labels), Reason: ndjson.ReasonPush, Fulltext: sub.Fulltext, Scrape: sub.Scrape},
		RequestedURL:    topic,
		URL:             topic,
		Redirects:       []ndjson.Redirect{},
		FetchedAt:       ndjson.At(now),
		HTTPStatus:      http.StatusOK,
		RequestHeaders:  map[string]string{},
		ResponseHeaders: httpx.Flatten(h),
		BodyRef:         &ndjson.BlobRef{Storage: storedir.RawStorage, Key: key},
		BodySHA256:      sum,
		ContentType:     r.Header.Get("Content-Type"),
		ContentLength:   int64(len(body)),
	}
	if err := spool.Put(s.cfg.Store, f); err != nil {
		return "", err
	}
	// The body is safe: a failure to count it costs the count only.
	if err := s.cat.Pushed(context.WithoutCancel(r.Context()), sub.FeedID, now); err != nil {
		s.cfg.Log.Error("the push is spooled, but not counted in the catalog", "feed_id", sub.FeedID, "fetch_id", id, "err", err)
	}
	s.cfg.Log.Info("took a pushed body", "origin", origin, "feed_id", sub.FeedID, "fetch_id", id, "bytes", len(body))
	return id, nil
}

// hostOf is the host of the URL u, as a list for knownHosts: none for "".
func hostOf(u string) []string {
	if p, err := url.Parse(u); err == nil && p.Hostname() != "" {
		return []string{p.Host}
	}
	return nil
}

// withPush adds each feed's push and archive walk to outs (the API shows
// them as feed-sub ls --json does).
func (s *Server) withPush(ctx context.Context, outs ...*FeedOut) error {
	if len(outs) == 0 {
		return nil
	}
	now := s.cfg.Now()
	push, err := s.cat.PushStatuses(ctx, now)
	if err != nil {
		return err
	}
	walks, err := s.cat.Walks(ctx, now.UTC().Truncate(24*time.Hour))
	if err != nil {
		return err
	}
	for _, o := range outs {
		sub.WithPush(o.Listing, push, walks)
	}
	return nil
}

// pushOfFeed is the push and walk of the feed of sb and fs, as its page
// shows them.
func (s *Server) pushOfFeed(ctx context.Context, sb ndjson.Subscription, fs catalog.FeedState, now time.Time) (*catalog.PushStatus, *catalog.Walk, error) {
	push, err := s.cat.PushStatuses(ctx, now)
	if err != nil {
		return nil, nil, err
	}
	walks, err := s.cat.Walks(ctx, now.UTC().Truncate(24*time.Hour))
	if err != nil {
		return nil, nil, err
	}
	l := sub.WithPush(sub.ListingOf(sb, fs, now), push, walks)
	return l.PushState, l.Walk, nil
}
