// Package progress shows a one-line, self-overwriting status on a terminal
// and stays silent everywhere else.
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
		fmt.Fprintf(l.w, "\r\x1b[K%s", l.text)
	}
}

// Done erases the status line.
func (l *Line) Done() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.text != "" {
		fmt.Fprint(l.w, "\r\x1b[K")
	}
}
