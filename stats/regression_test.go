package stats

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestOLS(t *testing.T) {
	tt := []float64{0, 1, 2, 3, 4, 5}
	y := make([]float64, len(tt))
	for i, v := range tt {
		y[i] = 0.9 - 0.01*v
	}
	r, err := OLS(tt, y)
	if err != nil || math.Abs(r.Slope+0.01) > 1e-15 || math.Abs(r.Intercept-0.9) > 1e-15 || r.StdErr > 1e-9 || r.P > 1e-9 || r.N != 6 {
		t.Errorf("exact line: %+v %v", r, err)
	}
	flat, err := OLS(tt, []float64{2, 2, 2, 2, 2, 2})
	if err != nil || flat.Slope != 0 || flat.P != 1 || flat.Intercept != 2 {
		t.Errorf("constant y: %+v %v", flat, err)
	}
	noisy, _ := OLS(tt, []float64{1, 3, 2, 5, 3, 4})
	if !(noisy.P > 0.01 && noisy.P < 1) || !(noisy.StdErr > 0) {
		t.Errorf("noisy: %+v", noisy)
	}
	for _, c := range []struct {
		t, y []float64
		want error
	}{
		{[]float64{1, 2}, []float64{1, 2}, ErrTooFewSamples},
		{tt, y[:5], ErrInvalidInput},
		{[]float64{1, 1, 1}, []float64{1, 2, 3}, ErrDegenerate},
		{[]float64{1, 2, math.NaN()}, []float64{1, 2, 3}, ErrInvalidInput},
	} {
		if _, err := OLS(c.t, c.y); !errors.Is(err, c.want) {
			t.Errorf("OLS(%v, %v): %v, want %v", c.t, c.y, err, c.want)
		}
	}
}

func TestLogLinear(t *testing.T) {
	tt := []float64{0, 10, 20, 30, 40}
	y := make([]float64, len(tt))
	for i, v := range tt {
		y[i] = 0.95 * math.Exp(-0.002*v)
	}
	r, err := LogLinear(tt, y)
	if err != nil || math.Abs(r.Slope+0.002) > 1e-15 || math.Abs(math.Exp(r.Intercept)-0.95) > 1e-14 {
		t.Errorf("%+v %v", r, err)
	}
	if _, err := LogLinear(tt, []float64{1, 0, 1, 1, 1}); !errors.Is(err, ErrInvalidInput) {
		t.Error(err)
	}
}

func TestTheilSen(t *testing.T) {
	// Ties in t: pairs with equal t have no slope and are left out.
	tt := []float64{0, 1, 1, 2, 3, 4, 4, 5, 6, 7}
	y := []float64{1.0, 0.98, 0.99, 0.97, 0.95, 0.94, 0.96, 0.92, 0.91, 0.2} // one outlier
	r, err := TheilSen(tt, y, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	var slopes []float64
	for i := range tt {
		for j := i + 1; j < len(tt); j++ {
			if tt[i] != tt[j] {
				slopes = append(slopes, (y[j]-y[i])/(tt[j]-tt[i]))
			}
		}
	}
	slices.Sort(slopes)
	want, _ := Quantile(slopes, 0.5)
	if math.Abs(r.Slope-want) > 1e-15 || !(r.Low <= r.Slope && r.Slope <= r.High) || r.Slope < -0.02 {
		t.Errorf("Theil–Sen %+v, median slope %v", r, want)
	}
	// The outlier drags OLS far more.
	o, _ := OLS(tt, y)
	if !(o.Slope < r.Slope) {
		t.Errorf("OLS %v vs Theil–Sen %v", o.Slope, r.Slope)
	}
	big := make([]float64, MaxTheilSenPoints+1)
	for _, c := range []struct {
		t, y  []float64
		level float64
		want  error
	}{
		{tt[:2], y[:2], 0.95, ErrTooFewSamples},
		{big, big, 0.95, ErrTooManySamples},
		{tt, y, 1.5, ErrInvalidParameter},
		{tt, y[:4], 0.95, ErrInvalidInput},
		{[]float64{2, 2, 2}, []float64{1, 2, 3}, 0.95, ErrDegenerate},
	} {
		if _, err := TheilSen(c.t, c.y, c.level); !errors.Is(err, c.want) {
			t.Errorf("TheilSen: %v, want %v", err, c.want)
		}
	}
}
