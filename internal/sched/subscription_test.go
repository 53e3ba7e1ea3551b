package sched

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckCron(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want string // in the error; "" for none
	}{
		{"*/20 * * * *", ""},
		{"*/5 * * * *", ""},
		{"@hourly", ""},
		{"@daily", ""},
		{"@every 2h", ""},
		{"@every 5m", ""},
		{" 0 8 * * 1-5 ", ""},
		{"@every -1h", `"@every -1h": the interval must be positive`},
		{"@every 0s", `"@every 0s": the interval must be positive`},
		{"@every 1ms", `"@every 1ms": it fires every 1ms; a feed is polled at most every 5m0s`},
		{"@every 4m59s", "it fires every 4m59s"},
		{"* * * * *", `"* * * * *": it fires as often as every 1m0s; a feed is polled at most every 5m0s`},
		{"*/2 * * * *", "as often as every 2m0s"},
		{"0,3 * * * *", "as often as every 3m0s"},
		// 23:58 then 00:00 the next day.
		{"0,58 0,23 * * *", "as often as every 2m0s"},
		{"*/0 * * * *", "step of range should be a positive number"},
		{"61 * * * *", "bad cron expression"},
		{"@every soon", "bad cron expression"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			err := CheckCron(tc.expr)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrBadCron) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v, want one line with %q", err, tc.want)
			}
		})
	}
}
