package parse

import (
	"fmt"
	"strings"

	"github.com/feedpipe/feedpipe/internal/plural"
)

// maxWarnings caps the warnings of one document: a feed that gets every
// item wrong says so in a few lines.
const maxWarnings = 20

type warnKind uint8

const (
	warnCharset warnKind = iota
	warnRepair
	warnTruncated
	warnSkipped
	warnDate
	warnFuture
	warnOther
)

// warnings collects what a parse recovered from. Problems that repeat
// per item (dates) are counted, with the first example.
type warnings struct {
	list    []string
	dropped int
	counted map[warnKind]*counted
	order   []warnKind
	// held are the warnings added while holding, not yet in list.
	held    []string
	holding bool
}

type counted struct {
	n       int
	example string
}

func (w *warnings) add(_ warnKind, msg string) {
	if w.holding {
		w.held = append(w.held, msg)
		return
	}
	if len(w.list) >= maxWarnings {
		w.dropped++
		return
	}
	w.list = append(w.list, msg)
}

// hold keeps the warnings added from now on aside, so that warnings
// learnt later can go before them (release), or be dropped (discard).
func (w *warnings) hold() { w.holding, w.held = true, nil }

// release adds the warnings that first adds, then those held: the list
// is what adding them in that order makes it.
func (w *warnings) release(first func()) {
	held := w.held
	w.holding, w.held = false, nil
	first()
	for _, msg := range held {
		w.add(warnOther, msg)
	}
}

// discard drops the warnings held.
func (w *warnings) discard() { w.holding, w.held = false, nil }

// count records one more problem of a kind that repeats.
func (w *warnings) count(k warnKind, example string) {
	if w.counted == nil {
		w.counted = map[warnKind]*counted{}
	}
	c := w.counted[k]
	if c == nil {
		c = &counted{example: example}
		w.counted[k] = c
		w.order = append(w.order, k)
	}
	c.n++
}

// strings returns the warnings, never nil.
func (w *warnings) strings() []string {
	out := append([]string{}, w.list...)
	for _, k := range w.order {
		c := w.counted[k]
		var msg string
		switch k {
		case warnDate:
			msg = fmt.Sprintf("%d %s that cannot be read, left empty; the first: %s", c.n, plural.Word(c.n, "date", "dates"), c.example)
		case warnFuture:
			msg = fmt.Sprintf("%d %s in the future, kept; the first: %s", c.n, plural.Word(c.n, "date", "dates"), c.example)
		default:
			msg = fmt.Sprintf("%d times: %s", c.n, c.example)
		}
		if len(out) < maxWarnings {
			out = append(out, msg)
		} else {
			w.dropped++
		}
	}
	if w.dropped > 0 {
		out = append(out, fmt.Sprintf("and %d more %s", w.dropped, plural.Word(w.dropped, "warning", "warnings")))
	}
	return out
}

// quote shows a value from a document in a warning: quoted, short, one
// line.
func quote(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		cut := 60
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "..."
	}
	return fmt.Sprintf("%q", s)
}
