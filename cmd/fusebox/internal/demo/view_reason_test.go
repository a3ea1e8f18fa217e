package demo

import (
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
)

// TestViewReasonKeepsTheValue: the view never cuts the value that tripped
// (nor its budget), names refreshes and half-opens as such, and shows the
// latest cited verdict (the one that tripped, or the last healthy one).
func TestViewReasonKeepsTheValue(t *testing.T) {
	trip := "trip (3 of last 5, k=3): tail/latency-p999/p999_duration_ms breach value=155112.83741 budget=15000"
	cases := []struct {
		name  string
		texts []string
		want  []string // substrings
	}{
		{"trip", []string{"old breach value=1 budget=2", trip}, []string{"value=155112.83741 budget=15000", "trip ("}},
		{"half-open", []string{"half-open after 4m0s cool-down (trip 1); " + trip}, []string{"half-open: ", "value=155112.83741 budget=15000"}},
		{"refresh", []string{"refresh of the open state (unchanged since 12:13:00): half-open after 4m0s cool-down (trip 1); " + trip}, []string{"refresh: ", "value=155112.83741 budget=15000"}},
		{"close", []string{"healthy 3 of 3 of tripping SLO latency-p999 (tail/p999_duration_ms): ok value=7793.6490318421365 budget=15000, window 12:17:00..12:18:00"}, []string{"value=7793.6490318421365 budget=15000"}},
	}
	for _, tc := range cases {
		c := &schemas.FuseCommand{}
		for _, x := range tc.texts {
			c.Reasons = append(c.Reasons, schemas.Reason{VerdictID: "id", Text: x})
		}
		got := viewReason(c, 70)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q does not contain %q", tc.name, got, w)
			}
		}
		if n := len([]rune(got)); n > 70 {
			t.Errorf("%s: %q is %d runes, want at most 70", tc.name, got, n)
		}
	}
}
