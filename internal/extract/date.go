package extract

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/dates"
)

// strftime maps strftime conversions to Go layout elements. Conversions
// without a Go equivalent (%j, %U, ...) are not accepted.
var strftime = map[byte]string{
	'Y': "2006", 'y': "06", 'm': "01", 'd': "02", 'e': "_2",
	'H': "15", 'I': "03", 'M': "04", 'S': "05", 'p': "PM", 'f': "000000",
	'b': "Jan", 'h': "Jan", 'B': "January", 'a': "Mon", 'A': "Monday",
	'z': "-0700", 'Z': "MST", '%': "%",
	'F': "2006-01-02", 'T': "15:04:05", 'R': "15:04", 'D': "01/02/06",
}

// strftimeNoPad are the %-X forms (GNU): no zero padding.
var strftimeNoPad = map[byte]string{'m': "1", 'd': "2", 'H': "15", 'I': "3", 'M': "4", 'S': "5"}

// GoLayout returns the Go time layout for a date format given as a Go
// layout ("2006-01-02", returned as it is) or in strftime's notation
// ("%Y-%m-%d", recognised by its '%').
func GoLayout(format string) (string, error) {
	if !strings.Contains(format, "%") {
		// A Go layout names its fields by the reference time; one that
		// names none would match only itself.
		if !strings.ContainsAny(format, "0123456789") && !strings.Contains(format, "Jan") && !strings.Contains(format, "Mon") {
			return "", fmt.Errorf("%q is neither a Go layout (2006-01-02) nor strftime (%%Y-%%m-%%d)", format)
		}
		return format, nil
	}
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(format) {
			return "", fmt.Errorf("%q ends in a lone %%", format)
		}
		i++
		table := strftime
		if format[i] == '-' && i+1 < len(format) {
			i++
			table = strftimeNoPad
		}
		el, ok := table[format[i]]
		if !ok {
			return "", fmt.Errorf("%q: %%%c has no equivalent here", format, format[i])
		}
		b.WriteString(el)
	}
	return b.String(), nil
}

// ErrNoDate is returned by ParseDate for an empty value.
var ErrNoDate = errors.New("no date")

// ParseDate reads a publication date. With a format, value must follow it
// (a layout without a zone means UTC); a value that does not is read as
// any common form, and only failing that is an error. Without a format
// any common form is read (internal/dates).
func ParseDate(value, format string) (time.Time, error) {
	value = strings.Join(strings.Fields(value), " ")
	if value == "" {
		return time.Time{}, ErrNoDate
	}
	if format != "" {
		layout, err := GoLayout(format)
		if err != nil {
			return time.Time{}, err
		}
		t, err := time.Parse(layout, value)
		if err == nil {
			return t.UTC(), nil
		}
		if t, derr := dates.Parse(value); derr == nil {
			return t, nil
		}
		return time.Time{}, fmt.Errorf("date %q does not match the format %q", value, format)
	}
	return dates.Parse(value)
}
