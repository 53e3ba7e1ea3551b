// Command testserver serves a directory of feed files on loopback with
// ETag and Last-Modified support, for scripts/demo and the benchmarks. It
// writes its base URL to -url-file once it is listening, and runs until it
// is killed.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/feedpipe/feedpipe/internal/testserver"
)

func main() {
	dir := flag.String("dir", ".", "directory to serve")
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	urlFile := flag.String("url-file", "", "write the base URL here once listening")
	logFile := flag.String("log", "", "append a line per request to this file")
	flag.Parse()

	var reqLog io.Writer
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			log.Fatal(err)
		}
		reqLog = f
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
	log.Fatal(http.Serve(ln, testserver.New(*dir, reqLog)))
}
