package schemas

import (
	"reflect"
	"testing"
)

func TestECDFPoints(t *testing.T) {
	cases := []struct {
		name  string
		in    []float64
		max   int
		wantX []float64
		wantP []float64
	}{
		{"empty", nil, 4, nil, nil},
		{"one", []float64{7}, 4, []float64{7}, []float64{1}},
		{"fewer than max", []float64{1, 2, 3}, 4, []float64{1, 2, 3}, []float64{1.0 / 3, 2.0 / 3, 1}},
		{"thinned keeps both ends", []float64{0, 1, 2, 3, 4, 5, 6, 7, 8}, 3, []float64{0, 4, 8}, []float64{1.0 / 9, 5.0 / 9, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ECDFPoints(c.in, c.max)
			if got.N != len(c.in) || !reflect.DeepEqual(got.X, c.wantX) || !reflect.DeepEqual(got.P, c.wantP) {
				t.Fatalf("ECDFPoints(%v, %d) = %+v, want X %v P %v", c.in, c.max, got, c.wantX, c.wantP)
			}
		})
	}
	pp := PlottingPoints([]float64{1, 2}, 8)
	if !reflect.DeepEqual(pp.P, []float64{0.25, 0.75}) {
		t.Fatalf("PlottingPoints P = %v, want [0.25 0.75]", pp.P)
	}
	big := make([]float64, 10000)
	for i := range big {
		big[i] = float64(i)
	}
	if got := ECDFPoints(big, MaxEvidencePoints); len(got.X) != MaxEvidencePoints || got.X[0] != 0 || got.X[len(got.X)-1] != 9999 {
		t.Fatalf("10000 values: %d points from %v to %v, want %d from 0 to 9999", len(got.X), got.X[0], got.X[len(got.X)-1], MaxEvidencePoints)
	}
}
