package main

import (
	"strings"
	"testing"
	"time"
)

// TestParseTimeArg is the table of the one time syntax of report --from
// and --to and gen --start.
func TestParseTimeArg(t *testing.T) {
	now := time.Date(2025, 3, 4, 12, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"now", now, true},
		{"now-24h", now.Add(-24 * time.Hour), true},
		{"now-1d", now.Add(-24 * time.Hour), true},
		{"now-90m", now.Add(-90 * time.Minute), true},
		{"now+90m", now.Add(90 * time.Minute), true},
		{"now-1w", now.Add(-7 * 24 * time.Hour), true},
		{"now-1d12h", now.Add(-36 * time.Hour), true},
		{"now-1.5d", now.Add(-36 * time.Hour), true},
		{"now-2w3d4h5m", now.Add(-(17*24*time.Hour + 4*time.Hour + 5*time.Minute)), true},
		{"2025-03-01", time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), true},
		{"2025-03-01T10:00:00Z", time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC), true},
		{"2025-03-01T10:00:00.250Z", time.Date(2025, 3, 1, 10, 0, 0, 250e6, time.UTC), true},
		{"2025-03-01T10:00:00+02:00", time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC), true},
		{"now24h", time.Time{}, false},
		{"now-", time.Time{}, false},
		{"now--1d", time.Time{}, false},
		{"now-1x", time.Time{}, false},
		{"now-d", time.Time{}, false},
		{"now-1d-2h", time.Time{}, false},
		{"yesterday", time.Time{}, false},
		{"2025-03-01 10:00", time.Time{}, false},
		{"", time.Time{}, false},
	} {
		got, err := parseTimeArg(tc.in, now)
		if (err == nil) != tc.ok || !got.Equal(tc.want) {
			t.Errorf("parseTimeArg(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "now-1d") {
			t.Errorf("parseTimeArg(%q): error %q does not show the syntax", tc.in, err)
		}
	}
}

func TestParseDays(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1d", 24 * time.Hour, true},
		{"1w", 7 * 24 * time.Hour, true},
		{"36h", 36 * time.Hour, true},
		{"1d30m", 24*time.Hour + 30*time.Minute, true},
		{"500ms", 500 * time.Millisecond, true},
		{"1.5h", 90 * time.Minute, true},
		{"-1d", 0, false},
		{"1y", 0, false},
		{"d", 0, false},
		{"", 0, false},
	} {
		got, err := parseDays(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseDays(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// The commands that take times read them with parseTimeArg and parseDays:
// a value only that syntax accepts gets past the flag parsing (and fails
// later, on the missing broker or server), one it rejects is a usage error
// naming the flag.
func TestCommandsTakeTheTimeSyntax(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"report", "--from", "now-1x"}, "--from"},
		{[]string{"report", "--to", "tomorrow"}, "--to"},
		{[]string{"gen", "--start", "now-1q"}, "--start"},
		{[]string{"gen", "--duration", "1y"}, "--duration"},
		{[]string{"calibrate", "--brokers", "127.0.0.1:1", "--last", "1y"}, "--last"},
	} {
		code, _, stderr := runCmd(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.flag) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line naming %s", tc.args, code, stderr, exitUsage, tc.flag)
		}
	}
	// Accepted: they fail later, for the unreachable server, not for the time.
	for _, args := range [][]string{
		{"report", "--clickhouse", "127.0.0.1:1", "--timeout", "2s", "--from", "now-1d", "--to", "now-90m"},
		{"calibrate", "--brokers", "127.0.0.1:1", "--last", "1d", "--timeout", "2s", "--out", "-"},
	} {
		code, _, stderr := runCmd(t, args...)
		if code == exitUsage || strings.Contains(stderr, "--from") || strings.Contains(stderr, "--last") {
			t.Errorf("%v: exit %d, stderr %q; the times should be accepted", args, code, stderr)
		}
	}
}
