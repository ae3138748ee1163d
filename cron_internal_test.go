package sluice

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseCron(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr, zone string
		field      string // "" when valid
	}{
		{"*/5 * * * *", "", ""},
		{"0 30 9 * * MON-FRI", "Europe/Paris", ""},
		{"@hourly", "UTC", ""},
		{"@every 5m", "", ""},
		{"  @daily ", "America/New_York", ""},
		{"", "", "Cron"},
		{"* * * *", "", "Cron"},
		{"61 * * * *", "", "Cron"},
		{"@fortnightly", "", "Cron"},
		{"0 0 30 2 *", "", "Cron"}, // February 30th never comes
		{"TZ=UTC * * * * *", "", "Cron"},
		{"CRON_TZ=Europe/Paris 0 9 * * *", "", "Cron"},
		{"TZ=x", "", "Cron"}, // the parser itself panics on this one
		{"@hourly", "Mars/Olympus_Mons", "TimeZone"},
	} {
		_, err := parseCron(tc.expr, tc.zone)
		if tc.field == "" {
			require.NoError(t, err, "%q in %q", tc.expr, tc.zone)
			continue
		}
		var se *ScheduleError
		require.ErrorAs(t, err, &se, "%q in %q", tc.expr, tc.zone)
		require.ErrorIs(t, err, ErrInvalidSchedule)
		require.Equal(t, tc.field, se.Field, "%q in %q: %v", tc.expr, tc.zone, err)
	}
}

// TestLatestTick checks latest against walking every tick from first.
func TestLatestTick(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 7, 22, 13, 7, 0, time.UTC)
	for _, tc := range []struct{ expr, zone string }{
		{"* * * * * *", ""}, {"*/7 * * * *", ""}, {"0 30 2 * * *", "America/New_York"}, {"@every 90s", ""},
		{"@hourly", "Asia/Kolkata"}, {"0 0 1 */3 *", ""}, {"0 0 29 2 *", ""},
	} {
		s, err := parseCron(tc.expr, tc.zone)
		require.NoError(t, err)
		first := s.next(start)
		for _, d := range []time.Duration{0, time.Second, 90 * time.Second, 5 * time.Hour, 40 * 24 * time.Hour} {
			now := first.Add(d)
			want := first
			for n := s.next(want); !n.After(now) && want.Sub(first) < 4*365*24*time.Hour; n = s.next(want) {
				want = n
				if tc.expr == "* * * * * *" && d > 5*time.Hour {
					want = now.Truncate(time.Second) // the walk would take millions of steps
					break
				}
			}
			got := s.latest(first, now)
			require.Truef(t, want.Equal(got), "%s from %s to %s: want %s, got %s", tc.expr, first, now, want, got)
		}
	}
}

// TestCronDaylightSaving pins down what a cron expression does across
// the changes of daylight saving time, as docs/schedules.md tells it.
func TestCronDaylightSaving(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	ticks := func(expr string, from time.Time, n int) []string {
		s, err := parseCron(expr, "America/New_York")
		require.NoError(t, err)
		var out []string
		for t := from; len(out) < n; {
			t = s.next(t)
			out = append(out, t.In(ny).Format("Jan 2 15:04 MST"))
		}
		return out
	}
	// 02:30 does not exist on March 8th, 2026: that day has no tick.
	require.Equal(t, []string{"Mar 7 02:30 EST", "Mar 9 02:30 EDT"},
		ticks("30 2 * * *", time.Date(2026, 3, 7, 0, 0, 0, 0, ny), 2))
	// 01:30 happens twice on November 1st, 2026: both are ticks.
	require.Equal(t, []string{"Nov 1 01:30 EDT", "Nov 1 01:30 EST", "Nov 2 01:30 EST"},
		ticks("30 1 * * *", time.Date(2026, 10, 31, 12, 0, 0, 0, ny), 3))
	// An hourly schedule ticks every real hour through both.
	require.Equal(t, []string{"Mar 8 01:00 EST", "Mar 8 03:00 EDT", "Mar 8 04:00 EDT"},
		ticks("@hourly", time.Date(2026, 3, 8, 0, 30, 0, 0, ny), 3))
}

// FuzzParseCron feeds the parser arbitrary expressions: it never panics,
// and an expression it accepts fires after any time it is asked about.
func FuzzParseCron(f *testing.F) {
	for _, s := range []string{"* * * * *", "@every 1s", "TZ=x", "0 0 30 2 *", "@daily", "*/0 * * * *", "1-0 * * * *"} {
		f.Add(s)
	}
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr string) {
		s, err := parseCron(expr, "")
		if err != nil {
			require.True(t, errors.Is(err, ErrInvalidSchedule), "%v", err)
			return
		}
		next := s.next(from)
		require.True(t, next.IsZero() || next.After(from), "%q: next %s", expr, next)
	})
}
