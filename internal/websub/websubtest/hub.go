// Package websubtest is a WebSub hub for tests, on loopback: it takes
// subscription requests, verifies the subscriber's intent at its
// callback as the W3C Recommendation says (§5.3), distributes content
// signed with each subscription's secret (§7, §7.1), denies, and can die.
package websubtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/feedpipe/feedpipe/internal/websub"
)

// Sub is a subscription the hub holds.
type Sub struct {
	Topic, Callback, Secret string
	Lease                   time.Duration
	Verified                time.Time
}

// Event is what the hub did about a request: "verified", "refused" (the
// callback did not echo the challenge), "unsubscribed", "denied".
type Event struct {
	Kind, Topic, Callback string
	Status                int // the callback's answer
}

// Hub is a running test hub.
type Hub struct {
	*httptest.Server
	// Method signs what Publish sends: sha1, sha256 (the default),
	// sha384 or sha512.
	Method string
	// Client calls the callbacks.
	Client *http.Client

	mu     sync.Mutex
	subs   map[[2]string]*Sub // by topic and callback
	events chan Event
	asked  []url.Values
}

// New starts a hub on loopback; Close stops it (the hub dies).
func New() *Hub {
	h := &Hub{Method: "sha256", Client: &http.Client{Timeout: 10 * time.Second}, subs: map[[2]string]*Sub{}, events: make(chan Event, 1024)}
	h.Server = httptest.NewServer(http.HandlerFunc(h.serve))
	return h
}

// serve takes a subscription request (§5.1): 202, then the verification
// of intent at the callback, in the background.
func (h *Hub) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "a hub takes POST", http.StatusMethodNotAllowed)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f := r.PostForm
	h.mu.Lock()
	h.asked = append(h.asked, f)
	h.mu.Unlock()
	mode, topic, callback := f.Get("hub.mode"), f.Get("hub.topic"), f.Get("hub.callback")
	cb, err := url.Parse(callback)
	if (mode != websub.ModeSubscribe && mode != websub.ModeUnsubscribe) || topic == "" || err != nil || !cb.IsAbs() {
		http.Error(w, "hub.mode, hub.topic and an absolute hub.callback are needed", http.StatusBadRequest)
		return
	}
	lease := 10 * 24 * time.Hour
	if n, err := strconv.Atoi(f.Get("hub.lease_seconds")); err == nil && n > 0 {
		lease = time.Duration(n) * time.Second
	}
	w.WriteHeader(http.StatusAccepted)
	go h.verify(mode, topic, callback, f.Get("hub.secret"), lease)
}

// verify asks the callback to confirm mode for topic (§5.3).
func (h *Hub) verify(mode, topic, callback, secret string, lease time.Duration) {
	challenge := randomHex(16)
	q := url.Values{"hub.mode": {mode}, "hub.topic": {topic}, "hub.challenge": {challenge}}
	if mode == websub.ModeSubscribe {
		q.Set("hub.lease_seconds", strconv.Itoa(int(lease/time.Second)))
	}
	status, body := h.get(callback, q)
	if status/100 != 2 || body != challenge {
		h.events <- Event{Kind: "refused", Topic: topic, Callback: callback, Status: status}
		return
	}
	h.mu.Lock()
	key := [2]string{topic, callback}
	if mode == websub.ModeSubscribe {
		h.subs[key] = &Sub{Topic: topic, Callback: callback, Secret: secret, Lease: lease, Verified: time.Now()}
	} else {
		delete(h.subs, key)
	}
	h.mu.Unlock()
	kind := "verified"
	if mode == websub.ModeUnsubscribe {
		kind = "unsubscribed"
	}
	h.events <- Event{Kind: kind, Topic: topic, Callback: callback, Status: status}
}

// get calls the callback with q added to its query.
func (h *Hub) get(callback string, q url.Values) (int, string) {
	u, _ := url.Parse(callback)
	query := u.Query()
	for k, v := range q {
		query[k] = v
	}
	u.RawQuery = query.Encode()
	resp, err := h.Client.Get(u.String())
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	return resp.StatusCode, string(b)
}

// Next waits for the hub's next event, or fails after d.
func (h *Hub) Next(d time.Duration) (Event, error) {
	select {
	case e := <-h.events:
		return e, nil
	case <-time.After(d):
		return Event{}, fmt.Errorf("websubtest: no event in %s", d)
	}
}

// Subs are the verified subscriptions of topic.
func (h *Hub) Subs(topic string) []Sub {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Sub
	for k, s := range h.subs {
		if k[0] == topic {
			out = append(out, *s)
		}
	}
	return out
}

// Asked are the forms of every subscription request the hub took.
func (h *Hub) Asked() []url.Values {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]url.Values(nil), h.asked...)
}

// Publish distributes body, of contentType, to every subscriber of topic
// (§7): signed with each one's secret, with the hub and self links.
// It returns each callback's answer.
func (h *Hub) Publish(topic, contentType string, body []byte) map[string]int {
	out := map[string]int{}
	for _, s := range h.Subs(topic) {
		req, _ := http.NewRequest(http.MethodPost, s.Callback, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", contentType)
		req.Header.Add("Link", "<"+h.URL+`>; rel="hub"`)
		req.Header.Add("Link", "<"+topic+`>; rel="self"`)
		if s.Secret != "" {
			req.Header.Set("X-Hub-Signature", websub.Sign(h.Method, body, []byte(s.Secret)))
		}
		status := 0
		if resp, err := h.Client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			status = resp.StatusCode
		}
		out[s.Callback] = status
	}
	return out
}

// Deny tells the subscriber at callback that its subscription to topic
// is denied, or was cancelled (§5.2), and forgets it.
func (h *Hub) Deny(topic, callback, reason string) int {
	h.mu.Lock()
	delete(h.subs, [2]string{topic, callback})
	h.mu.Unlock()
	status, _ := h.get(callback, url.Values{"hub.mode": {websub.ModeDenied}, "hub.topic": {topic}, "hub.reason": {reason}})
	h.events <- Event{Kind: "denied", Topic: topic, Callback: callback, Status: status}
	return status
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
