// Command loadserve puts feed-serve under load for scripts/bench-serve: C
// clients on loopback, each sending the requests of a mix in turn for a
// duration (or a count), then one line of figures per kind of request and
// one for all: requests, requests/s, p50, p99, errors.
//
//	loadserve -url http://127.0.0.1:8080 [-c 200] [-d 30s] [-n 0] [-json FILE] [-window FILE]
//
// The mix: the feeds list (GET /feeds?limit=100), a feed's entries (GET
// /feeds/ID/entries?limit=50), an entry by uid (GET /entries/UID), a
// label's Atom feed (GET /labels/LABEL.atom) and /metrics, in equal parts;
// the ids, uids and labels are read from the server first. Each client
// keeps its connection alive and accepts gzip, whose answers it reads
// without decompressing them, through an HTTP/1.1 client of its own (raw.go). It sends nothing but to a loopback address,
// and stops by itself.
//
// With -window, another process (scripts/bench-serve) writes to FILE,
// while the load runs, the Unix times (in seconds) a stretch of it began
// and ended, one a line ("start T", "end T"): loadserve then also reports
// the figures of the requests sent within it, such as while a pipeline
// cycle wrote to the store.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loadserve:", err)
		os.Exit(1)
	}
}

// kinds are the requests of the mix.
var kinds = []string{"feeds", "entries", "entry", "atom", "metrics"}

type result struct {
	Kind     string  `json:"kind"`
	Window   bool    `json:"window,omitempty"` // of the requests sent within -window's stretch
	Requests int     `json:"requests"`
	RPS      float64 `json:"rps"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
	Errors   int     `json:"errors"`
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("loadserve", flag.ContinueOnError)
	base := fs.String("url", "http://127.0.0.1:8080", "feed-serve's address (loopback only)")
	clients := fs.Int("c", 200, "concurrent clients")
	dur := fs.Duration("d", 30*time.Second, "how long")
	limit := fs.Int("n", 0, "stop after this many requests (0: none but -d)")
	jsonOut := fs.String("json", "", "also write the results as NDJSON to this file")
	seed := fs.Uint64("seed", 1, "seed of the random choices")
	windowFile := fs.String("window", "", "also report the requests sent within the stretch this file names when the load ends")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*base)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-url %s: load goes to loopback addresses only", *base)
	}
	if u.Scheme != "http" {
		return fmt.Errorf("-url %s: load goes over http only", *base)
	}
	if u.Port() == "" {
		u.Host += ":80"
	}
	if *clients < 1 || *dur <= 0 || *dur > 10*time.Minute {
		return errors.New("-c must be at least 1 and -d from 1ns to 10m")
	}
	// The ids to ask for are read with Go's client; the load goes
	// through the clients of raw.go.
	feeds, labels, uids, err := discover(&http.Client{Timeout: 30 * time.Second}, *base)
	if err != nil {
		return err
	}
	prefix := strings.TrimSuffix(u.Path, "/")
	fmt.Fprintf(os.Stderr, "loadserve: %d feeds, %d labels, %d uids; %d clients for %s\n", len(feeds), len(labels), len(uids), *clients, *dur)
	var (
		mu      sync.Mutex
		samples = make([][]sample, len(kinds))
		count   atomic.Int64
		wg      sync.WaitGroup
		errMsg  atomic.Value
	)
	deadline := time.Now().Add(*dur)
	start := time.Now()
	for c := range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(*seed, uint64(c)))
			rc := &rawClient{addr: u.Host, host: u.Host, timeout: 30 * time.Second}
			defer func() {
				if rc.conn != nil {
					rc.conn.Close()
				}
			}()
			local := make([][]sample, len(kinds))
			for i := c; time.Now().Before(deadline); i++ {
				if *limit > 0 && count.Add(1) > int64(*limit) {
					break
				}
				k := i % len(kinds)
				var path string
				switch kinds[k] {
				case "feeds":
					path = "/feeds?limit=100"
				case "entries":
					path = "/feeds/" + feeds[rnd.IntN(len(feeds))] + "/entries?limit=50"
				case "entry":
					path = "/entries/" + uids[rnd.IntN(len(uids))]
				case "atom":
					path = "/labels/" + url.PathEscape(labels[rnd.IntN(len(labels))]) + ".atom"
				case "metrics":
					path = "/metrics"
				}
				t := time.Now()
				// The answers are sent compressed, as browsers ask for
				// them, and read, not decompressed (the load generator's
				// CPU is taken from the server's on a small machine).
				status, err := rc.get(prefix + path)
				if err == nil && status != 200 {
					err = fmt.Errorf("GET %s: status %d", path, status)
				}
				local[k] = append(local[k], sample{t, time.Since(t), err != nil})
				if err != nil {
					errMsg.CompareAndSwap(nil, err.Error())
				}
			}
			mu.Lock()
			for k := range kinds {
				samples[k] = append(samples[k], local[k]...)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	end := time.Now()
	results := summarizeAll(samples, start, end, false)
	printResults(stdout, results)
	if *windowFile != "" {
		from, to, err := readWindow(*windowFile, end)
		if err != nil {
			return err
		}
		within := make([][]sample, len(kinds))
		for k := range kinds {
			for _, s := range samples[k] {
				if !s.at.Before(from) && s.at.Before(to) {
					within[k] = append(within[k], s)
				}
			}
		}
		fmt.Fprintf(stdout, "within the window (%.1f s, from %.1f s on):\n", to.Sub(from).Seconds(), from.Sub(start).Seconds())
		in := summarizeAll(within, from, to, true)
		printResults(stdout, in)
		results = append(results, in...)
	}

	if m := errMsg.Load(); m != nil {
		fmt.Fprintf(os.Stderr, "loadserve: the first error: %s\n", m)
	}
	if *jsonOut != "" {
		f, err := os.Create(*jsonOut)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(f)
		for _, r := range results {
			enc.Encode(r)
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// sample is a request's start, how long its answer took, and whether it
// failed.
type sample struct {
	at     time.Time
	d      time.Duration
	failed bool
}

// summarizeAll are the figures of each kind and of all, sent from start
// to end.
func summarizeAll(samples [][]sample, start, end time.Time, window bool) []result {
	secs := end.Sub(start).Seconds()
	var all []time.Duration
	var results []result
	totalErr := 0
	for k, name := range kinds {
		d := make([]time.Duration, len(samples[k]))
		n := 0
		for i, s := range samples[k] {
			d[i] = s.d
			if s.failed {
				n++
			}
		}
		results = append(results, summarize(name, d, n, secs))
		all = append(all, d...)
		totalErr += n
	}
	results = append(results, summarize("all", all, totalErr, secs))
	for i := range results {
		results[i].Window = window
	}
	return results
}

func printResults(w io.Writer, results []result) {
	fmt.Fprintf(w, "%-8s %9s %9s %8s %8s %7s\n", "request", "requests", "req/s", "p50 ms", "p99 ms", "errors")
	for _, r := range results {
		fmt.Fprintf(w, "%-8s %9d %9.0f %8.2f %8.2f %7d\n", r.Kind, r.Requests, r.RPS, r.P50ms, r.P99ms, r.Errors)
	}
}

// readWindow reads the stretch's start and end from file; a stretch not
// ended yet, or ended after the load, ends with the load at end.
func readWindow(file string, end time.Time) (from, to time.Time, err error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return from, to, fmt.Errorf("-window: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		name, value, _ := strings.Cut(strings.TrimSpace(line), " ")
		secs, err := strconv.ParseFloat(value, 64)
		if err != nil || secs <= 0 {
			return from, to, fmt.Errorf("-window %s: %q is not \"start|end UNIXTIME\"", file, line)
		}
		t := time.Unix(0, int64(secs*1e9))
		switch name {
		case "start":
			from = t
		case "end":
			to = t
		default:
			return from, to, fmt.Errorf("-window %s: %q is not \"start|end UNIXTIME\"", file, line)
		}
	}
	if to.IsZero() || to.After(end) {
		to = end
	}
	if from.IsZero() || !to.After(from) {
		return from, to, fmt.Errorf("-window %s: no start before the end of the stretch and the load", file)
	}
	return from, to, nil
}

func summarize(kind string, d []time.Duration, errs int, secs float64) result {
	slices.Sort(d)
	q := func(p float64) float64 {
		if len(d) == 0 {
			return 0
		}
		return float64(d[min(len(d)-1, int(p*float64(len(d))))].Microseconds()) / 1000
	}
	return result{Kind: kind, Requests: len(d), RPS: float64(len(d)) / secs, P50ms: q(0.50), P99ms: q(0.99), Errors: errs}
}

// discover reads feed ids, labels and entry uids from the server.
func discover(client *http.Client, base string) (feeds, labels, uids []string, err error) {
	var fl struct {
		Feeds []struct {
			FeedID string   `json:"feed_id"`
			Labels []string `json:"labels"`
		} `json:"feeds"`
	}
	if err := getJSON(client, base+"/feeds?limit=1000", &fl); err != nil {
		return nil, nil, nil, err
	}
	seen := map[string]bool{}
	for _, f := range fl.Feeds {
		feeds = append(feeds, f.FeedID)
		for _, l := range f.Labels {
			if !seen[l] {
				seen[l] = true
				labels = append(labels, l)
			}
		}
	}
	if len(feeds) == 0 || len(labels) == 0 {
		return nil, nil, nil, errors.New("the server has no feeds with labels to load")
	}
	for i := 0; i < len(feeds) && len(uids) < 2000; i += max(1, len(feeds)/50) {
		var el struct {
			Entries []struct {
				UID string `json:"entry_uid"`
			} `json:"entries"`
		}
		if err := getJSON(client, base+"/feeds/"+feeds[i]+"/entries?limit=100", &el); err != nil {
			return nil, nil, nil, err
		}
		for _, e := range el.Entries {
			uids = append(uids, e.UID)
		}
	}
	if len(uids) == 0 {
		return nil, nil, nil, errors.New("the server has no entries to load")
	}
	return feeds, labels, uids, nil
}

func getJSON(client *http.Client, u string, v any) error {
	resp, err := client.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
