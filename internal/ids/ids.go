// Package ids derives every identifier feedpipe uses: feed ids, entry ids,
// content hashes and fetch ids. Identity rules live here and nowhere else.
package ids

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
	"github.com/google/uuid"

	"github.com/feedpipe/feedpipe/internal/urlnorm"
)

// FeedID is the UUIDv5 (URL namespace) of a subscription's normalized URL.
// It is computed once, when the subscription is created, and then kept even
// if the feed moves (docs/design.md#identity).
func FeedID(normalizedURL string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte(normalizedURL)).String()
}

// EntryKey is everything an entry's identity may be derived from.
type EntryKey struct {
	FeedID string
	// NativeID is the format's own id: Atom id, RSS guid, JSON Feed id.
	NativeID string
	// NativeIDShared is set when the document gives this NativeID to more
	// than one item, which makes it useless as an identity.
	NativeIDShared bool
	Link           string // the entry's canonical link
	Title          string
	Published      time.Time
	// Body (summary or content) is used only when an item has no usable
	// native id, no link, no title and no date: without it every such item
	// of a feed would share one uid.
	Body string
}

// EntryUID returns the entry's id: 16 lower-case hex digits of xxhash64.
//
// The native id wins when the feed gives one and it is unique within the
// document; it is compared by urlnorm.Key, so a feed that flips its guids
// from http to https, or changes their host's case, keeps its ids. Otherwise
// the id hashes the canonical link, the whitespace-collapsed title and the
// publication time (to the second), which is stable across fetches because
// none of them depends on when we fetched. The fetch time is never part of
// an id: that would make every fetch of an undated item a new entry.
func EntryUID(k EntryKey) string {
	h := xxhash.New()
	field := func(s string) {
		h.WriteString(s)
		h.Write([]byte{0}) // separator: ("ab","c") and ("a","bc") must differ
	}
	field(k.FeedID)
	native := strings.TrimSpace(k.NativeID)
	if native != "" && !k.NativeIDShared {
		field("native")
		field(urlnorm.Key(native))
		return hex16(h.Sum64())
	}
	field("tuple")
	if k.Link != "" {
		field(urlnorm.Key(k.Link))
	} else {
		field("")
	}
	field(CollapseSpace(k.Title))
	if k.Published.IsZero() {
		field("")
	} else {
		field(k.Published.UTC().Format(time.RFC3339))
	}
	if k.Link == "" && CollapseSpace(k.Title) == "" && k.Published.IsZero() {
		field(CollapseSpace(k.Body))
	}
	return hex16(h.Sum64())
}

// ContentHash hashes what a reader sees of an entry: title, summary,
// content and links, whitespace-collapsed. A known entry_uid whose hash
// changed is an update.
func ContentHash(title, summary, content string, links []string) string {
	// The bytes hashed are gathered in one buffer and hashed at once: the
	// same hash as writing them piece by piece to a digest, without a call
	// for each piece.
	bp := hashBufs.Get().(*[]byte)
	b := (*bp)[:0]
	for _, s := range []string{title, summary, content} {
		b = append(appendCollapsed(b, s), 0)
	}
	for _, l := range links {
		b = append(append(b, strings.TrimSpace(l)...), 0)
	}
	sum := xxhash.Sum64(b)
	if cap(b) <= maxHashBuf {
		*bp = b
		hashBufs.Put(bp)
	}
	return hex16(sum)
}

// hashBufs hold ContentHash's buffers for reuse; one above maxHashBuf
// (a huge entry) is left to the collector.
var hashBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxHashBuf = 1 << 20

// FetchID returns a UUIDv7 for a fetch made at now, with random bits from
// rand. It is written here rather than taken from a library because the
// libraries read the wall clock, and feedpipe injects its clock.
func FetchID(now time.Time, rand io.Reader) (string, error) {
	var u uuid.UUID
	ms := uint64(now.UnixMilli())
	binary.BigEndian.PutUint64(u[:8], ms<<16)
	if _, err := io.ReadFull(rand, u[6:]); err != nil {
		return "", fmt.Errorf("ids: fetch id: %w", err)
	}
	u[6] = 0x70 | u[6]&0x0f // version 7
	u[8] = 0x80 | u[8]&0x3f // RFC 9562 variant
	return u.String(), nil
}

// CollapseSpace trims s and replaces every run of white space with one
// space: strings.Join(strings.Fields(s), " "), without the copy when s is
// already so.
func CollapseSpace(s string) string {
	if collapsed(s) {
		return s
	}
	return string(appendCollapsed(make([]byte, 0, len(s)), s))
}

// collapsed reports whether CollapseSpace(s) is s: no white space at
// either end, and only single ASCII spaces inside.
func collapsed(s string) bool {
	prevSpace := true // no white space at the start
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if asciiSpace[c] {
				if c != ' ' || prevSpace {
					return false
				}
				prevSpace = true
			} else {
				prevSpace = false
			}
			i++
			continue
		}
		if n := spaceAt(s, i); n > 0 {
			return false
		}
		prevSpace = false
		i++
	}
	return !prevSpace || s == ""
}

// spaceAt is the length of the non-ASCII white space character at s[i],
// or 0: what unicode.IsSpace says of the rune there, by its bytes. Only
// runes led by 0xC2 (U+0085, U+00A0) or 0xE1-0xE3 (U+1680,
// U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000) are white
// space (TestSpaceLeadBytes); any other byte is no space, and no such
// lead byte is ever the continuation of another rune, so the text may be
// walked byte by byte with the result of decoding it rune by rune.
func spaceAt(s string, i int) int {
	if i+1 >= len(s) {
		return 0
	}
	c1 := s[i+1]
	switch s[i] {
	case 0xC2:
		if c1 == 0x85 || c1 == 0xA0 {
			return 2
		}
		return 0
	case 0xE1, 0xE2, 0xE3:
	default:
		return 0
	}
	if i+2 >= len(s) {
		return 0
	}
	c2 := s[i+2]
	switch s[i] {
	case 0xE1:
		if c1 == 0x9A && c2 == 0x80 {
			return 3
		}
	case 0xE2:
		if c1 == 0x80 && (0x80 <= c2 && c2 <= 0x8A || c2 == 0xA8 || c2 == 0xA9 || c2 == 0xAF) || c1 == 0x81 && c2 == 0x9F {
			return 3
		}
	case 0xE3:
		if c1 == 0x80 && c2 == 0x80 {
			return 3
		}
	}
	return 0
}

// load8 reads the eight bytes of s as one little-endian word (one load:
// the compiler merges them).
func load8(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// byteIs marks the bytes of x equal to c with their high bit, exactly:
// no carry crosses from one byte to the next.
func byteIs(x uint64, c byte) uint64 {
	const ones, highs, lows = 0x0101010101010101, 0x8080808080808080, 0x7f7f7f7f7f7f7f7f
	v := x ^ ones*uint64(c)
	return ^((v&lows + lows) | v) & highs
}

// maySpace marks the bytes white space can begin with: the ASCII white
// space and the lead bytes of spaceAt.
var maySpace = func() (t [256]bool) {
	for c := range utf8.RuneSelf {
		t[c] = asciiSpace[c]
	}
	t[0xC2], t[0xE1], t[0xE2], t[0xE3] = true, true, true, true
	return t
}()

// asciiSpace is unicode.IsSpace for the ASCII bytes.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// appendCollapsed appends CollapseSpace(s) to b: the runs of words of s
// and the single spaces between them, copied as they are, with one space
// between runs. The hashes depend on these bytes being exactly those of
// strings.Join(strings.Fields(s), " "): white space is what
// unicode.IsSpace says of each rune (an invalid byte is not), as for
// strings.Fields (FuzzCollapseSpace).
func appendCollapsed(b []byte, s string) []byte {
	sep := false // a run was written: the next one goes after a space
	for i := 0; i < len(s); {
		// White space at i, if any.
		for i < len(s) {
			if c := s[i]; c < utf8.RuneSelf {
				if !asciiSpace[c] {
					break
				}
				i++
			} else if n := spaceAt(s, i); n > 0 {
				i += n
			} else {
				break
			}
		}
		if i == len(s) {
			break
		}
		k := wordsEnd(s, i)
		if sep {
			b = append(b, ' ')
		}
		b = append(b, s[i:k]...)
		sep = true
		i = k
	}
	return b
}

// wordsEnd is where the run of words that begins at s[i] (no white
// space) ends: at the first white space that is more than one ASCII
// space between word bytes, or at the end of s. Eight bytes at a time,
// the bytes that may end it marked in one number: those up to the space
// but single spaces, and the lead bytes spaceAt looks at (0xE0 taken
// with 0xE1-0xE3: one test for the four) in text above ASCII; the byte
// loop reads the first marked one (after a space, the space). The eight
// bytes read next do not depend on those read (a space that ends them is
// carried to the next eight as prev), so that the reads of memory
// overlap rather than wait for one another.
func wordsEnd(s string, i int) int {
	const ones, highs, lows = 0x0101010101010101, 0x8080808080808080, 0x7f7f7f7f7f7f7f7f
	k := i + 1 // s[k-1] is a word byte
	for {
		prev := uint64(0) // 0x80 when s[k-1] is a space: the eight before ended in one
		for k+8 <= len(s) {
			x := load8(s[k : k+8])
			low := ^((x&lows + ones*(0x80-0x21)) | x) & highs // bytes up to the space
			sp := byteIs(x, ' ')
			mark := low ^ sp | sp&(sp>>8) | sp&prev // but single spaces
			if x&highs != 0 {
				mark |= byteIs(x, 0xC2) | byteIs(x&(ones*0xFC), 0xE0)
			}
			if mark != 0 {
				j := bits.TrailingZeros64(mark) >> 3
				switch {
				case j > 0 && sp>>(8*j-1)&1 != 0:
					j-- // a space before it may end the run
				case j == 0 && prev != 0:
					j = -1 // the space that ended the eight before
				}
				k += j
				prev = 0
				break
			}
			prev = sp >> 56
			k += 8
		}
		if prev != 0 {
			k-- // the space before may end the run: read it again
		}
		if k >= len(s) {
			return len(s)
		}
		c := s[k]
		switch {
		case !maySpace[c]:
			k++
		case c == ' ':
			if k+1 < len(s) && !maySpace[s[k+1]] {
				k += 2
				continue
			}
			return k
		case c >= utf8.RuneSelf && spaceAt(s, k) == 0:
			k++ // byte by byte: see spaceAt
		default:
			return k
		}
	}
}

// hex16 is v as 16 lower-case hex digits.
func hex16(v uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[v&0xf]
		v >>= 4
	}
	return string(b[:])
}
