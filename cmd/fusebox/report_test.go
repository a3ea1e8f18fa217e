package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseReportTime(t *testing.T) {
	now := time.Date(2025, 3, 4, 12, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"now", now, true},
		{"now-24h", now.Add(-24 * time.Hour), true},
		{"now+90m", now.Add(90 * time.Minute), true},
		{"2025-03-01", time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), true},
		{"2025-03-01T10:00:00+02:00", time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC), true},
		{"now24h", time.Time{}, false},
		{"yesterday", time.Time{}, false},
	} {
		got, err := parseReportTime(tc.in, now)
		if (err == nil) != tc.ok || !got.Equal(tc.want) {
			t.Errorf("parseReportTime(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// Usage errors are found before any connection is made.
func TestReportAndMigrateUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"report", "--from", "x"}, "--from"},
		{[]string{"report", "--format", "xml"}, "--format"},
		{[]string{"report", "nope"}, `unknown report "nope"`},
		{[]string{"report", "--from", "2025-03-02", "--to", "2025-03-01", "drift_top"}, "to:"},
		{[]string{"report", "error_budget", "--objective", "1.5"}, "objective"},
		{[]string{"report", "--database", "a-b"}, "database"},
		{[]string{"migrate", "--database", "1x"}, "database"},
		{[]string{"migrate", "--clickhouse", ""}, "addrs"},
		{[]string{"migrate", "extra"}, `unexpected argument "extra"`},
	} {
		code, _, stderr := runCmd(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, exitUsage, tc.stderr)
		}
	}
}
