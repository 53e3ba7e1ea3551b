// Command testserver serves a directory of feed files, generated feeds
// (/gen/N.xml) and faults (/fault/...) with the routes of
// internal/testserver, for scripts/demo and scripts/bench-fetch. It writes
// its base URL to -url-file once it is listening, and runs until it is
// killed.
//
// GET /admin/revision?set=N sets the revision of the generated feeds, so
// that a script can make every /gen/ feed change between two cycles (each
// bump adds one item); without set= it answers the current revision. From
// bash, without curl:
//
//	exec 3<>/dev/tcp/127.0.0.1/$port
//	printf 'GET /admin/revision?set=1 HTTP/1.0\r\n\r\n' >&3 && cat <&3
//
// Listening on 0.0.0.0:PORT makes it reachable at every 127.x.y.z address,
// which a benchmark uses to stand for many publishers. Like a publisher's
// static server, it makes each generated feed once per revision and keeps
// it, gzipped, so that its CPU is little next to the client's; -gen N
// makes /gen/0.xml to /gen/N-1.xml before it starts listening, and a
// revision change makes the feeds again before it is answered, so that a
// benchmark's cycle finds them made, as files are on a publisher's disk.
// It serves on one CPU (-procs) unless told otherwise.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"

	"github.com/feedpipe/feedpipe/internal/testserver"
)

func main() {
	dir := flag.String("dir", ".", "directory to serve")
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	urlFile := flag.String("url-file", "", "write the base URL here once listening")
	logFile := flag.String("log", "", "append a line per request to this file")
	revision := flag.Int("revision", 0, "initial revision of the generated feeds")
	gen := flag.Int("gen", 0, "make generated feeds /gen/0.xml to /gen/N-1.xml before listening")
	procs := flag.Int("procs", 1, "CPUs that serve requests at once (GOMAXPROCS) once listening")
	flag.Parse()

	var reqLog io.Writer
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			log.Fatal(err)
		}
		reqLog = f
	}
	h := testserver.New(*dir, reqLog)
	h.SetRevision(*revision)
	h.Prepare(*gen) // on every CPU
	// One CPU by default: a benchmark's client shares the machine, and
	// requests handed between two threads cost the server a fifth more
	// CPU (wake-ups, context switches) than one thread serving them all,
	// at the thousands a second a benchmark asks for.
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	if *urlFile != "" {
		if err := os.WriteFile(*urlFile+".tmp", []byte(base+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
		if err := os.Rename(*urlFile+".tmp", *urlFile); err != nil {
			log.Fatal(err)
		}
	} else {
		fmt.Println(base)
	}
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/admin/revision" {
			h.ServeHTTP(w, r)
			return
		}
		if s := r.URL.Query().Get("set"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				http.Error(w, "set= needs an integer", http.StatusBadRequest)
				return
			}
			h.SetRevision(n)
		}
		fmt.Fprintln(w, h.Revision())
	})))
}
