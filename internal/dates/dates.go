// Package dates reads the dates feeds are written with (RFC 822 and its
// many variants, ISO 8601 and W3C-DTF, Unix timestamps and the free forms
// publishers invent, with day and month names in a dozen languages) as
// instants in UTC.
package dates

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ErrUnparseable is wrapped by every error Parse returns.
var ErrUnparseable = errors.New("not a date")

// maxLen caps what Parse looks at: no date is longer, and the cap keeps a
// hostile value from costing more than a few microseconds.
const maxLen = 128

// Parse reads s as a date and returns it in UTC. A date without a time is
// midnight; a time without a zone is UTC. It never guesses from the clock:
// a date without a year, or one with a day or month out of range, is an
// error. Two-digit years follow RFC 2822 (00-49 are 2000-2049, 50-99 are
// 1950-1999). A numeric date whose day and month are ambiguous (01/02/2006)
// is read month first, as the American software that writes it means;
// with dots (01.02.2006) day first.
func Parse(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, fmt.Errorf("dates: empty: %w", ErrUnparseable)
	}
	if len(s) > maxLen {
		return time.Time{}, fmt.Errorf("dates: %d bytes is too long for a date: %w", len(s), ErrUnparseable)
	}
	// The common cases first: RFC 3339 (Atom, JSON Feed) and RFC 1123
	// (RSS) through the standard library's fast paths.
	if len(s) >= 20 && s[4] == '-' && (s[10] == 'T' || s[10] == 't') && (s[len(s)-1] == 'Z' || s[len(s)-3] == ':') {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t.UTC(), nil
		}
	}
	if t, ok := parseRFC1123(s); ok {
		return t, nil
	}
	var p parser
	t, ok := p.parse(s)
	if !ok {
		return time.Time{}, fmt.Errorf("dates: %q: %w", s, ErrUnparseable)
	}
	return t, nil
}

// parseRFC1123 reads the common form of RSS's dates, "Mon, 02 Jan 2006
// 15:04:05 -0700" (or GMT, UT, UTC, Z; a day of one digit too), at a
// tenth of the general reading's cost; ok is false for anything else,
// which the general reading reads (TestRFC1123 holds the two together).
func parseRFC1123(s string) (time.Time, bool) {
	if len(s) < 26 || s[3] != ',' || s[4] != ' ' || !weekday(s[:3]) {
		return time.Time{}, false
	}
	s = s[5:]
	day, n := twoDigits(s)
	if n == 0 || len(s) < n+1 || s[n] != ' ' {
		return time.Time{}, false
	}
	s = s[n+1:]
	if len(s) < 19 || s[3] != ' ' || s[8] != ' ' || s[11] != ':' || s[14] != ':' || s[17] != ' ' {
		return time.Time{}, false
	}
	month := monthAbbr(s[:3])
	year, ok := digits(s[4:8])
	h, ok1 := digits(s[9:11])
	m, ok2 := digits(s[12:14])
	sec, ok3 := digits(s[15:17])
	if month == 0 || !ok || !ok1 || !ok2 || !ok3 || h > 23 || m > 59 || sec > 59 {
		return time.Time{}, false
	}
	var off int
	switch z := s[18:]; z {
	case "GMT", "UT", "UTC", "Z":
	default:
		if len(z) != 5 || z[0] != '+' && z[0] != '-' {
			return time.Time{}, false
		}
		zh, ok := digits(z[1:3])
		zm, ok2 := digits(z[3:5])
		if !ok || !ok2 || zh > 14 || zm > 59 {
			return time.Time{}, false
		}
		off = zh*3600 + zm*60
		if z[0] == '-' {
			off = -off
		}
	}
	if day < 1 || day > daysIn(time.Month(month), year) {
		return time.Time{}, false
	}
	return time.Date(year, time.Month(month), day, h, m, sec, 0, time.UTC).Add(-time.Duration(off) * time.Second), true
}

func weekday(s string) bool {
	switch s {
	case "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun":
		return true
	}
	return false
}

// monthAbbr is the number of an English month's abbreviation, or 0.
func monthAbbr(s string) int {
	for i, m := range [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"} {
		if s == m {
			return i + 1
		}
	}
	return 0
}

// twoDigits reads one or two digits at the start of s: their value and
// how many there are.
func twoDigits(s string) (v, n int) {
	for n < 2 && n < len(s) && s[n] >= '0' && s[n] <= '9' {
		v = v*10 + int(s[n]-'0')
		n++
	}
	return v, n
}

// digits is the value of s, which must be all digits.
func digits(s string) (int, bool) {
	v := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		v = v*10 + int(s[i]-'0')
	}
	return v, true
}

type tokKind uint8

const (
	tNum  tokKind = iota + 1 // digits
	tWord                    // letters, lower-cased
	tTime                    // hh:mm[:ss[.frac]]
	tSign                    // + or - directly before digits
	tSep                     // one of / . - , and other punctuation
)

type token struct {
	kind   tokKind
	sep    byte      // tSep: the character; tNum: the separator before it (0 for space)
	val    int       // tNum: the value; tSign: +1 or -1
	digits int       // tNum: how many digits
	class  wordClass // tWord: what the word names; val holds its value
	glued  bool      // tWord: written right after a digit or letter, as "Textra" in "00:00Textra"
	korean bool      // tWord: a Korean date word (오전, 오후, 년, 월, 일)
	// tTime
	h, m, sec, ns int
	hasSec        bool
}

type wordClass uint8

const (
	wOther wordClass = iota // days of the week, "de", "at", "um"
	wMonth                  // val: 1-12
	wZone                   // val: seconds east of UTC
	wAM
	wPM
	wZ        // "Z" after a time: UTC
	wT        // "T" between an ISO date and its time
	wLateZone // a zone only after the time; val: seconds east of UTC
)

// classify says what a lower-cased word names.
func classify(w string) (wordClass, int) {
	if m, ok := monthNames[w]; ok {
		return wMonth, m
	}
	switch w {
	case "am", "오전":
		return wAM, 0
	case "pm", "오후":
		return wPM, 0
	case "z":
		return wZ, 0
	case "t":
		return wT, 0
	}
	if off, ok := zoneNames[w]; ok {
		return wZone, off
	}
	if off, ok := lateZones[w]; ok {
		return wLateZone, off
	}
	return wOther, 0
}

type parser struct {
	toks [24]token
	n    int
}

func (p *parser) add(t token) bool {
	if p.n == len(p.toks) {
		return false
	}
	p.toks[p.n] = t
	p.n++
	return true
}

// lex splits s into tokens. It reports false for a string no date looks
// like (too many tokens, numbers too long).
func (p *parser) lex(s string) bool {
	var lastSep byte
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			j := i
			v := 0
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				if j-i >= 14 {
					return false
				}
				v = v*10 + int(s[j]-'0')
				j++
			}
			if j < len(s) && s[j] == ':' && j-i <= 2 {
				// A time: hh:mm[:ss[.frac]]
				t := token{kind: tTime, h: v}
				k := j + 1
				m, nd, k2 := digitsAt(s, k, 2)
				if nd != 2 && nd != 1 {
					return false
				}
				t.m, k = m, k2
				if k < len(s) && s[k] == ':' {
					sec, nd, k3 := digitsAt(s, k+1, 2)
					if nd == 0 {
						return false
					}
					t.sec, t.hasSec, k = sec, true, k3
					if k+1 < len(s) && (s[k] == '.' || s[k] == ',') && s[k+1] >= '0' && s[k+1] <= '9' {
						k++
						scale := 100_000_000
						for k < len(s) && s[k] >= '0' && s[k] <= '9' {
							t.ns += int(s[k]-'0') * scale
							scale /= 10
							k++
						}
					}
				}
				if !p.add(t) {
					return false
				}
				i = k
				lastSep = 0
				continue
			}
			if !p.add(token{kind: tNum, val: v, digits: j - i, sep: lastSep}) {
				return false
			}
			lastSep = 0
			i = j
			// Ordinal suffixes: 1st, 2nd, 3rd, 4th.
			if j+2 <= len(s) {
				switch string([]byte{s[j] | 0x20, s[j+1] | 0x20}) {
				case "st", "nd", "rd", "th":
					if j+2 == len(s) || !isLetterAt(s, j+2) {
						i = j + 2
					}
				}
			}
		case c == '+' || c == '-':
			if i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' {
				sign := 1
				if c == '-' {
					sign = -1
				}
				if !p.add(token{kind: tSign, val: sign, sep: c}) {
					return false
				}
				lastSep = c
			} else {
				lastSep = c
			}
			i++
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(':
			// A comment such as "(UTC)" or "(Pacific Standard Time)".
			end := strings.IndexByte(s[i:], ')')
			if end < 0 {
				return false
			}
			i += end + 1
		case c < utf8.RuneSelf && !isASCIILetter(c):
			lastSep = c
			i++
		default:
			j := i
			ascii := true
			for j < len(s) {
				r, size := utf8.DecodeRuneInString(s[j:])
				if r >= utf8.RuneSelf {
					ascii = false
				}
				if !unicode.IsLetter(r) {
					break
				}
				j += size
			}
			if j == i { // a symbol that is not a letter: a separator
				_, size := utf8.DecodeRuneInString(s[i:])
				i += size
				continue
			}
			t := token{kind: tWord}
			var lower [24]byte
			w := s[i:j]
			switch {
			case ascii && len(w) <= len(lower):
				for k := 0; k < len(w); k++ {
					lower[k] = w[k] | 0x20
				}
				t.class, t.val = classify(string(lower[:len(w)]))
			case ascii:
				// Too long for a month or zone name.
			default:
				t.class, t.val = classify(strings.ToLower(w))
			}
			// "a.m." and "p.m."
			if (w == "a" || w == "A" || w == "p" || w == "P") && j+1 < len(s) && s[j] == '.' && s[j+1]|0x20 == 'm' {
				t.class = wAM
				if w[0]|0x20 == 'p' {
					t.class = wPM
				}
				j += 2
			}
			t.glued = i > 0 && (isASCIILetter(s[i-1]) || s[i-1] >= '0' && s[i-1] <= '9')
			switch w {
			case "오전", "오후", "년", "월", "일":
				t.korean = true
			}
			if !p.add(t) {
				return false
			}
			lastSep = 0
			i = j
			if i < len(s) && s[i] == '.' { // abbreviations: "Jan.", "févr."
				i++
			}
		}
	}
	return true
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isLetterAt(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsLetter(r)
}

// digitsAt reads up to max digits at s[i:].
func digitsAt(s string, i, max int) (v, n, end int) {
	for i < len(s) && n < max && s[i] >= '0' && s[i] <= '9' {
		v = v*10 + int(s[i]-'0')
		n++
		i++
	}
	return v, n, i
}

// parse reads the tokens of s as a date.
func (p *parser) parse(s string) (time.Time, bool) {
	if !p.lex(s) {
		return time.Time{}, false
	}
	toks := p.toks[:p.n]
	var (
		year, month, day = -1, -1, -1
		yearDigits       int
		tm               *token
		zone             int  // seconds east of UTC
		haveZone         bool // a zone was given
		pm, am           bool
		monthWord        = -1 // index of the token that named the month
		korean           bool // a Korean date word: the time is KST
		nums             []int
		numsBuf          [8]int
	)
	nums = numsBuf[:0]

	// ISO 8601 and W3C-DTF: 2006, 2006-01, 2006-01-02, 20060102, the
	// ordinal 2006-002, and the truncated forms of ISO 8601:1988 with a
	// two-digit year, each optionally followed by a time.
	i := 0
	iso := false
	if len(toks) > 0 {
		if y, mo, d, yd, next, ok := isoDate(toks); ok {
			year, month, day, yearDigits = y, mo, d, yd
			iso = true
			i = next
			// An ISO time may be glued on with a T: lex reads "T15" as a
			// word followed by the time, so drop a lone "t".
			if i < len(toks) && toks[i].kind == tWord && toks[i].class == wT {
				i++
			}
			// Basic format time: 150405 or 1504.
			if i < len(toks) && toks[i].kind == tNum && (toks[i].digits == 6 || toks[i].digits == 4) {
				v := toks[i].val
				t := token{kind: tTime}
				if toks[i].digits == 6 {
					t.h, t.m, t.sec, t.hasSec = v/10000, v/100%100, v%100, true
				} else {
					t.h, t.m = v/100, v%100
				}
				p.toks[i] = t
			}
		}
	}

	for ; i < len(toks); i++ {
		t := &toks[i]
		switch t.kind {
		case tTime:
			if tm != nil {
				return time.Time{}, false
			}
			tm = t
		case tSign:
			// A signed number after the time is a zone offset: +0100,
			// +01:00, +01, -5. Before it, the sign is a separator
			// (06-Nov-94).
			if tm == nil || i+1 >= len(toks) {
				continue
			}
			off, next, ok := offsetAt(toks, i)
			if !ok {
				return time.Time{}, false
			}
			zone, haveZone = off, true
			i = next - 1
		case tNum:
			nums = append(nums, i)
			if len(nums) > 3 {
				return time.Time{}, false
			}
		case tWord:
			switch t.class {
			case wMonth:
				// Of two month names (Spanish "mar., 5 de marzo"), the
				// last wins: the first was the day of the week.
				if year < 0 {
					month, monthWord = t.val, i
				}
			case wAM:
				am = true
			case wPM:
				pm = true
			case wZ:
				if tm != nil {
					zone, haveZone = 0, true
				}
			case wLateZone:
				if tm != nil && !haveZone {
					zone, haveZone = t.val, true
				}
			case wZone:
				// "+0100 (CET)" said it already, but GMT+1 says it next.
				if !haveZone {
					zone, haveZone = t.val, true
				}
				if t.val == 0 && i+2 < len(toks) && toks[i+1].kind == tSign {
					off, next, ok := offsetAt(toks, i+1)
					if !ok {
						return time.Time{}, false
					}
					zone, haveZone = off, true
					i = next - 1
				}
			case wOther:
				// After an ISO date, a word stuck to it is junk, not a
				// day of the week: "2013-01-28T11:30:00-06:00Textra".
				if iso && t.glued {
					return time.Time{}, false
				}
			}
			if t.korean {
				korean = true
			}
			// Anything else (days of the week, "de", "at", "um") says
			// nothing we need.
		}
	}
	// Korean software writes its local time, KST, and says so by the
	// language alone.
	if korean && !haveZone {
		zone, haveZone = 9*3600, true
	}

	switch {
	case iso:
		// ISO: the date is complete; plain numbers after it are not
		// allowed.
		if len(nums) > 0 {
			return time.Time{}, false
		}
	case monthWord >= 0:
		// 02 Jan 2006, Jan 2 2006, Jan 2, 2006, 2 January 2006.
		switch len(nums) {
		case 1:
			// "January 2006"; not a day without a year, nor a month and
			// year with a time, which lost its day.
			n := toks[nums[0]]
			if n.digits != 4 || tm != nil {
				return time.Time{}, false
			}
			year, yearDigits, day = n.val, 4, 1
		case 2:
			a, b := toks[nums[0]], toks[nums[1]]
			if a.digits >= 3 || a.val > 31 {
				a, b = b, a
			}
			day, year, yearDigits = a.val, b.val, b.digits
		default:
			return time.Time{}, false
		}
	default:
		switch len(nums) {
		case 1:
			// A Unix timestamp in seconds or milliseconds.
			n := toks[nums[0]]
			if p.n != 1 {
				return time.Time{}, false
			}
			switch {
			case n.digits >= 9 && n.digits <= 10:
				return time.Unix(int64(n.val), 0).UTC(), true
			case n.digits >= 12 && n.digits <= 13:
				return time.UnixMilli(int64(n.val)).UTC(), true
			}
			return time.Time{}, false
		case 3:
			a, b, c := toks[nums[0]], toks[nums[1]], toks[nums[2]]
			switch {
			case a.digits == 4: // 2006/01/02, 2006年1月2日
				year, month, day, yearDigits = a.val, b.val, c.val, 4
			case c.digits == 4 || c.digits == 2:
				year, yearDigits = c.val, c.digits
				switch {
				case b.sep == '.' || a.val > 12:
					day, month = a.val, b.val
				default:
					month, day = a.val, b.val
				}
			default:
				return time.Time{}, false
			}
		default:
			return time.Time{}, false
		}
	}

	if yearDigits < 2 || yearDigits > 4 {
		return time.Time{}, false
	}
	year = fullYear(year, yearDigits)
	if month < 1 || month > 12 || day < 1 || day > daysIn(time.Month(month), year) {
		return time.Time{}, false
	}
	var h, mi, sec, ns int
	if tm != nil {
		h, mi, sec, ns = tm.h, tm.m, tm.sec, tm.ns
		if pm || am {
			if h < 1 || h > 12 {
				return time.Time{}, false
			}
			if pm && h < 12 {
				h += 12
			} else if am && h == 12 {
				h = 0
			}
		}
		if h > 24 || mi > 59 || sec > 60 || h == 24 && (mi != 0 || sec != 0 || ns != 0) {
			return time.Time{}, false
		}
		if sec == 60 { // a leap second
			sec = 59
		}
	}
	t := time.Date(year, time.Month(month), day, h, mi, sec, ns, time.UTC)
	return t.Add(-time.Duration(zone) * time.Second), true
}

// isoDate reads an ISO 8601 date from the start of toks: YYYY,
// YYYY-MM, YYYY-MM-DD, YYYYMMDD, the ordinal YYYY-DDD and YYYYDDD, and
// ISO 8601:1988's forms with a two-digit year (YY-MM-DD, YYMMDD, YY-DDD,
// YYDDD, and truncated -YY-MM and -YYMM). yd is how many digits the year
// has; next is the first token after the date. A form that is no valid
// date is not ISO, and is left to the other rules (12-31-03 is American).
func isoDate(toks []token) (y, m, d, yd, next int, ok bool) {
	// lex makes "-01" a sign and a number: part reads the number after
	// a "-" of up to max digits.
	part := func(i, min, max int) (int, bool) {
		if i+1 < len(toks) && toks[i].kind == tSign && toks[i].val < 0 && toks[i+1].kind == tNum && toks[i+1].digits >= min && toks[i+1].digits <= max {
			return toks[i+1].val, true
		}
		return 0, false
	}
	// alone says the number is the whole date, but for a time after a
	// "T": "031231" is a date, "031231 12" is not.
	alone := func(i int) bool { return i == len(toks) || toks[i].kind == tWord && toks[i].class == wT }
	first := toks[0]
	switch {
	case first.kind == tSign && first.val < 0 && len(toks) > 1 && toks[1].kind == tNum && toks[1].sep == '-':
		// Truncated: -YYMM, -YY-MM.
		n := toks[1]
		switch {
		case n.digits == 4 && alone(2):
			return calendar(n.val/100, 2, n.val%100, 1, 2)
		case n.digits == 2:
			if mo, ok := part(2, 1, 2); ok {
				return calendar(n.val, 2, mo, 1, 4)
			}
		}
		return 0, 0, 0, 0, 0, false
	case first.kind != tNum:
		return 0, 0, 0, 0, 0, false
	case first.digits == 8:
		return calendar(first.val/10000, 4, first.val/100%100, first.val%100, 1)
	case first.digits == 7 && alone(1):
		return ordinal(first.val/1000, 4, first.val%1000, 1)
	case first.digits == 6 && alone(1):
		return calendar(first.val/10000, 2, first.val/100%100, first.val%100, 1)
	case first.digits == 5 && alone(1):
		return ordinal(first.val/1000, 2, first.val%1000, 1)
	case first.digits == 2:
		if mo, ok := part(1, 1, 2); ok {
			if day, ok := part(3, 1, 2); ok {
				return calendar(first.val, 2, mo, day, 5)
			}
			return 0, 0, 0, 0, 0, false
		}
		if doy, ok := part(1, 3, 3); ok {
			return ordinal(first.val, 2, doy, 3)
		}
		return 0, 0, 0, 0, 0, false
	case first.digits != 4:
		return 0, 0, 0, 0, 0, false
	}
	y, m, d, next = first.val, 1, 1, 1
	if doy, ok := part(next, 3, 3); ok {
		if _, more := part(next+2, 1, 2); !more { // 2003-012-31 is Google's month with a zero too many
			return ordinal(y, 4, doy, 3)
		}
	}
	if v, ok := part(next, 1, 2); ok {
		m, next = v, next+2
		if v, ok := part(next, 1, 2); ok {
			d, next = v, next+2
		}
		return y, m, d, 4, next, true
	}
	// A bare year is a date only on its own (W3C-DTF "2006").
	if len(toks) == 1 {
		return y, m, d, 4, next, true
	}
	// 2006/01/02 and 2006.01.02 are read by the numeric rules.
	return 0, 0, 0, 0, 0, false
}

// calendar is isoDate's result for a year, month and day, if they make a
// date (a two-digit year as Parse reads it).
func calendar(y, yd, m, d, next int) (int, int, int, int, int, bool) {
	if m < 1 || m > 12 || d < 1 || d > daysIn(time.Month(m), fullYear(y, yd)) {
		return 0, 0, 0, 0, 0, false
	}
	return y, m, d, yd, next, true
}

// ordinal is isoDate's result for a year and a day of that year.
func ordinal(y, yd, doy, next int) (int, int, int, int, int, bool) {
	full := fullYear(y, yd)
	if doy < 1 || doy > time.Date(full, 12, 31, 0, 0, 0, 0, time.UTC).YearDay() {
		return 0, 0, 0, 0, 0, false
	}
	t := time.Date(full, 1, doy, 0, 0, 0, 0, time.UTC)
	return y, int(t.Month()), t.Day(), yd, next, true
}

// fullYear is a year of yd digits as Parse reads it: two-digit years as
// RFC 2822 says.
func fullYear(y, yd int) int {
	switch {
	case yd == 2 && y < 50:
		return y + 2000
	case yd == 2:
		return y + 1900
	case yd == 3:
		return y + 1900
	}
	return y
}

// offsetAt reads a zone offset at toks[i] (a tSign): +hhmm, +hh:mm, +hh,
// +h. next is the first token after it.
func offsetAt(toks []token, i int) (off, next int, ok bool) {
	sign := toks[i].val
	if i+1 >= len(toks) {
		return 0, 0, false
	}
	n := toks[i+1]
	var h, m int
	switch {
	case n.kind == tTime: // +01:00
		h, m = n.h, n.m
		if n.hasSec {
			return 0, 0, false
		}
	case n.kind == tNum && n.digits == 4:
		h, m = n.val/100, n.val%100
	case n.kind == tNum && n.digits <= 2:
		h = n.val
	default:
		return 0, 0, false
	}
	if h > 14 || m > 59 {
		return 0, 0, false
	}
	return sign * (h*3600 + m*60), i + 2, true
}

func daysIn(m time.Month, year int) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
