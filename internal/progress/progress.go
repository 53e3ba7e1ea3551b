// Package progress shows a one-line, self-overwriting status on a terminal
// and stays silent everywhere else. The log lines written to the same
// terminal go through the Line (Write), which clears the status before
// each and shows it again after, so that none runs into it.
package progress

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Line is a status line. The zero value and a nil *Line are silent.
type Line struct {
	w    io.Writer
	mu   sync.Mutex
	last time.Time
	text string
}

// New returns a Line writing to w, or nil (silent) when w is nil.
func New(w io.Writer) *Line {
	if w == nil {
		return nil
	}
	return &Line{w: w}
}

// Show replaces the status, at most ten times a second.
func (l *Line) Show(format string, args ...any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := time.Now(); now.Sub(l.last) >= 100*time.Millisecond {
		l.last = now
		l.text = fmt.Sprintf(format, args...)
		fmt.Fprint(l.w, clear+l.text)
	}
}

// clear goes back to the start of the line and erases it.
const clear = "\r\x1b[K"

// Write writes p, a whole line (a log record), to the Line's terminal:
// first the line is cleared (the status, or another process's status on
// the same terminal), then p is written and the status shown again below
// it. A Line is so the writer of the logs on its terminal.
func (l *Line) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := make([]byte, 0, len(clear)+len(p)+len(l.text))
	b = append(append(append(b, clear...), p...), l.text...)
	if _, err := l.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Done erases the status line.
func (l *Line) Done() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.text != "" {
		fmt.Fprint(l.w, clear)
		l.text = ""
	}
}
