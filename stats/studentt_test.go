package stats

import (
	"errors"
	"math"
	"testing"
)

func TestStudentTQuantile(t *testing.T) {
	// scipy.stats.t.ppf values.
	for _, tc := range []struct{ q, df, want float64 }{
		{0.975, 1, 12.706204736174698},
		{0.975, 10, 2.2281388519649385},
		{0.975, 100, 1.9839715185235556},
		{0.5, 7, 0},
		{0.05, 3, -2.353363434801823},
	} {
		got, err := StudentTQuantile(tc.q, tc.df)
		if err != nil || math.Abs(got-tc.want) > 1e-9*math.Max(1, math.Abs(tc.want)) {
			t.Errorf("StudentTQuantile(%v, %v) = %v, %v; want %v", tc.q, tc.df, got, err, tc.want)
		}
	}
	for _, bad := range [][2]float64{{0, 3}, {1, 3}, {0.5, 0}, {0.5, math.Inf(1)}, {math.NaN(), 3}} {
		if _, err := StudentTQuantile(bad[0], bad[1]); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("StudentTQuantile(%v, %v): err %v, want ErrInvalidParameter", bad[0], bad[1], err)
		}
	}
}
