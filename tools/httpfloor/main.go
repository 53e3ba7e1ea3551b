// Command httpfloor times the HTTP part of a fetch cycle alone, so that
// scripts/bench-fetch can say how much of a cycle is the pipeline's own
// cost and how much any Go client would pay on the same machine:
//
//	httpfloor -c CONCURRENCY [-pid SERVER_PID] URLFILE
//
// It GETs every URL of URLFILE (one per line) with net/http's client,
// CONCURRENCY at a time, reading each body to the end, and keeps each
// response's ETag and Last-Modified; then GETs them all again with
// If-None-Match and If-Modified-Since. It prints one line per pass:
//
//	cold|warm  wall_s  cpu_s  server_cpu_s  200s  304s  errors
//
// cpu_s is this process's user and system time in the pass, server_cpu_s
// that of process SERVER_PID (-1 without -pid). Nothing is parsed or
// stored: the floor under feed-fetch, not a competitor to it.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	conc := flag.Int("c", 5, "requests in flight")
	pid := flag.Int("pid", 0, "also report the CPU time of this `process` (the server)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: httpfloor [-c N] URLFILE")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *conc < 1 {
		flag.Usage()
		os.Exit(2)
	}
	urls, err := readLines(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpfloor:", err)
		os.Exit(2)
	}
	// One feed per host is the bench's default: a connection is not
	// reused, as for feed-fetch, which closes a host's last connection.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:       (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		DisableKeepAlives: true,
	}}
	for _, p := range cycle(client, urls, *conc, *pid) {
		fmt.Printf("%s\t%.2f\t%.2f\t%.2f\t%d\t%d\t%d\n", p.name, p.wall, p.cpu, p.serverCPU, p.ok, p.notModified, p.errors)
	}
}

// pass is what one pass over the URLs took and got.
type pass struct {
	name                    string
	wall, cpu, serverCPU    float64
	ok, notModified, errors int
}

// cycle GETs urls twice, conc at a time: plainly ("cold"), then with the
// validators of the first answers ("warm").
func cycle(client *http.Client, urls []string, conc, pid int) []pass {
	validators := make([][2]string, len(urls))
	var passes []pass
	for _, name := range []string{"cold", "warm"} {
		p := pass{name: name, serverCPU: -1}
		var mu sync.Mutex
		cpu0, srv0, t0 := cpuSeconds(), processCPU(pid), time.Now()
		each(len(urls), conc, func(i int) {
			code, etag, lm := get(client, urls[i], validators[i])
			mu.Lock()
			defer mu.Unlock()
			switch code {
			case http.StatusOK:
				p.ok++
				validators[i] = [2]string{etag, lm}
			case http.StatusNotModified:
				p.notModified++
			default:
				p.errors++
			}
		})
		p.wall, p.cpu = time.Since(t0).Seconds(), cpuSeconds()-cpu0
		if srv0 >= 0 {
			p.serverCPU = processCPU(pid) - srv0
		}
		passes = append(passes, p)
	}
	return passes
}

// get fetches url, conditionally when v holds validators, and returns the
// status (0 for a failed request) and the response's validators.
func get(client *http.Client, url string, v [2]string) (int, string, string) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		return 0, "", ""
	}
	if v[0] != "" {
		req.Header.Set("If-None-Match", v[0])
	}
	if v[1] != "" {
		req.Header.Set("If-Modified-Since", v[1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", ""
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, "", ""
	}
	return resp.StatusCode, resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
}

// each calls f(0) to f(n-1), conc at a time.
func each(n, conc int, f func(int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// processCPU is the user and system seconds of process pid from
// /proc/PID/stat, or -1 when it cannot be read (or pid is 0). The clock
// tick is taken to be 100 Hz, Linux's USER_HZ on every architecture.
func processCPU(pid int) float64 {
	if pid == 0 {
		return -1
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is the first, utime the 12th, stime the 13th.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return -1
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return (utime + stime) / 100
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			lines = append(lines, l)
		}
	}
	return lines, sc.Err()
}
