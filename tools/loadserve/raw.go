package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// rawClient sends GETs over one kept-alive connection and reads each
// answer's status and length, discarding its body. The load generator
// shares the server's CPUs: Go's http.Client cost about as much CPU per
// request as feed-serve's answer (a connection's reader and writer
// goroutines, handed each request and response; the headers as maps), all
// of it taken from the server and the pipeline it is measured beside.
type rawClient struct {
	addr, host string
	timeout    time.Duration
	conn       net.Conn
	br         *bufio.Reader
	req        []byte
}

// get sends GET path (with Accept-Encoding: gzip) and reads the answer;
// it returns the status. After an error the connection is closed, and the
// next get opens another.
func (c *rawClient) get(path string) (int, error) {
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, c.timeout)
		if err != nil {
			return 0, err
		}
		c.conn = conn
		if c.br == nil {
			c.br = bufio.NewReaderSize(conn, 32<<10)
		} else {
			c.br.Reset(conn)
		}
	}
	c.req = append(c.req[:0], "GET "...)
	c.req = append(c.req, path...)
	c.req = append(c.req, " HTTP/1.1\r\nHost: "...)
	c.req = append(c.req, c.host...)
	c.req = append(c.req, "\r\nAccept-Encoding: gzip\r\nUser-Agent: loadserve\r\n\r\n"...)
	c.conn.SetDeadline(time.Now().Add(c.timeout))
	status, keep, err := c.exchange()
	if err != nil || !keep {
		c.conn.Close()
		c.conn = nil
	}
	return status, err
}

func (c *rawClient) exchange() (status int, keep bool, err error) {
	if _, err := c.conn.Write(c.req); err != nil {
		return 0, false, err
	}
	return readResponse(c.br)
}

// readResponse reads an HTTP/1.1 answer to a GET from br, its body
// discarded; keep is false when the connection cannot carry another.
func readResponse(br *bufio.Reader) (status int, keep bool, err error) {
	line, err := readLine(br)
	if err != nil {
		return 0, false, err
	}
	proto, rest, _ := bytes.Cut(line, []byte(" "))
	code, _, _ := bytes.Cut(rest, []byte(" "))
	if status, err = strconv.Atoi(string(code)); err != nil || !bytes.HasPrefix(proto, []byte("HTTP/1.")) || len(code) != 3 {
		return 0, false, fmt.Errorf("not an HTTP/1 status line: %q", clip(line))
	}
	keep = string(proto) == "HTTP/1.1"
	length, chunked := int64(-1), false
	for {
		line, err := readLine(br)
		if err != nil {
			return status, false, err
		}
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return status, false, fmt.Errorf("not a header line: %q", clip(line))
		}
		value = bytes.TrimSpace(value)
		switch {
		case asciiEqualFold(name, "Content-Length"):
			if length, err = strconv.ParseInt(string(value), 10, 64); err != nil || length < 0 {
				return status, false, fmt.Errorf("bad Content-Length %q", clip(value))
			}
		case asciiEqualFold(name, "Transfer-Encoding"):
			chunked = asciiEqualFold(value, "chunked")
		case asciiEqualFold(name, "Connection"):
			if asciiEqualFold(value, "close") {
				keep = false
			}
		}
	}
	switch {
	case status == 204 || status == 304 || status/100 == 1:
		return status, keep, nil
	case chunked:
		return status, keep, discardChunks(br)
	case length >= 0:
		_, err := br.Discard(int(length))
		return status, keep, err
	default: // the body runs to the connection's end
		_, err := io.Copy(io.Discard, br)
		return status, false, err
	}
}

func discardChunks(br *bufio.Reader) error {
	for {
		line, err := readLine(br)
		if err != nil {
			return err
		}
		size, _, _ := bytes.Cut(line, []byte(";"))
		n, err := strconv.ParseInt(string(bytes.TrimSpace(size)), 16, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("bad chunk size %q", clip(line))
		}
		if n == 0 {
			for { // trailers, up to an empty line
				line, err := readLine(br)
				if err != nil || len(line) == 0 {
					return err
				}
			}
		}
		if _, err := br.Discard(int(n)); err != nil {
			return err
		}
		if line, err := readLine(br); err != nil || len(line) != 0 {
			return errors.Join(err, errors.New("no CRLF after a chunk"))
		}
	}
}

// readLine reads a line ended by CRLF (or LF), without it; the slice is
// valid until the next read.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return bytes.TrimSuffix(line[:len(line)-1], []byte("\r")), nil
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func clip(b []byte) string {
	if len(b) > 80 {
		b = b[:80]
	}
	return string(b)
}
