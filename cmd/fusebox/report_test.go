package main

import (
	"strings"
	"testing"
)

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
		{[]string{"report", "sla_credit", "--credit-exponent", "-1"}, "credit-exponent"},
		{[]string{"report", "sla_credit", "--credit-cap", "-5"}, "credit-cap"},
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
