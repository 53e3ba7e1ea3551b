package read

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// ParseWhen reads a time as feed-read's --since and --until take it: RFC
// 3339 (2026-11-20T08:00:00Z), a day (2026-11-20, midnight UTC), or a
// duration back from now: Go's (90m, 24h, 1h30m) or a number of days
// (7d).
func ParseWhen(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if d, err := strconv.Atoi(n); err == nil && d >= 0 && d <= 100000 {
			return now.AddDate(0, 0, -d), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, errors.New("not a time: write it as RFC 3339 (2026-11-20T08:00:00Z), a day (2026-11-20) or a duration back from now (90m, 24h, 7d)")
}
