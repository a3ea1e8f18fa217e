package soak

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// samplesOf makes one sample a minute with RSS f(minute).
func samplesOf(n int, f func(i int) float64) []Sample {
	out := make([]Sample, n)
	for i := range out {
		out[i] = Sample{At: time.Duration(i) * time.Minute, RSS: f(i)}
	}
	return out
}

func TestJudgeTellsGrowthFromNoise(t *testing.T) {
	rss := allSeries[0]
	cases := []struct {
		name  string
		f     func(i int) float64
		grows bool
	}{
		{"plateau", func(i int) float64 { return 100 * mib }, false},
		{"sawtooth", func(i int) float64 { return float64(100+60*(i%3)) * mib }, false},
		{"one spike", func(i int) float64 { return float64(100+400*boolInt(i == 40)) * mib }, false},
		{"a step, then flat", func(i int) float64 { return float64(100+80*boolInt(i >= 25)) * mib }, false},
		{"a slow leak, 2 MiB/min", func(i int) float64 { return (100 + 2*float64(i)) * mib }, true},
		{"a leak under a sawtooth", func(i int) float64 { return float64(100+3*i+10*(i%3)) * mib }, true},
	}
	for _, c := range cases {
		r := judge(rss, samplesOf(60, c.f), 20)
		if r.Grows != c.grows {
			t.Errorf("%s: grows %v, want %v (%s)", c.name, r.Grows, c.grows, r.Why)
		}
	}
	if r := judge(rss, samplesOf(10, func(int) float64 { return 1 }), 8); r.Grows || !strings.HasPrefix(r.Why, "not judged") {
		t.Errorf("2 samples after the warm-up: %+v, want not judged", r)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestOptionsValidateNamesTheField(t *testing.T) {
	ok := DefaultOptions()
	ok.Command = []string{"fusebox"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for field, mod := range map[string]func(*Options){
		"Command":   func(o *Options) { o.Command = nil },
		"Duration":  func(o *Options) { o.Duration = 0 },
		"WarmUp":    func(o *Options) { o.WarmUp = o.Duration },
		"Every":     func(o *Options) { o.Every = 15 * time.Minute },
		"Rate":      func(o *Options) { o.Rate = math.NaN() },
		"Amplitude": func(o *Options) { o.Amplitude = 1 },
		"Burst":     func(o *Options) { o.Burst = 0.5 },
		"BurstAt":   func(o *Options) { o.BurstAt = 1 },
	} {
		o := ok
		mod(&o)
		err := o.Validate()
		if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want an ErrOptions naming it", field, err)
		}
	}
}

func TestRateFollowsTheDayAndTheBurst(t *testing.T) {
	o := DefaultOptions()
	o.Burst, o.BurstAt, o.BurstFor = 10, 0.5, 5*time.Minute
	for _, c := range []struct {
		at   time.Duration
		want float64
	}{{0, 100}, {15 * time.Minute, 200}, {29 * time.Minute, 200 * (1 - 0.5*math.Cos(2*math.Pi*29/60))},
		{30 * time.Minute, 3000}, {34 * time.Minute, 10 * 200 * (1 - 0.5*math.Cos(2*math.Pi*34/60))}, {35 * time.Minute, 200 * (1 - 0.5*math.Cos(2*math.Pi*35/60))}} {
		if got := o.rate(c.at); math.Abs(got-c.want) > 1e-9*c.want {
			t.Errorf("rate at %v = %v, want %v", c.at, got, c.want)
		}
	}
	if o.peak() != 3000 {
		t.Errorf("peak = %v, want 3000", o.peak())
	}
}

func TestRenderNeedsThePlaceholders(t *testing.T) {
	y, err := render(DefaultConfigYAML(), []string{"a:1", "b:2"}, "127.0.0.1:5")
	if err != nil || !strings.Contains(y, "brokers: [a:1, b:2]") || !strings.Contains(y, "listen: 127.0.0.1:5") || !strings.Contains(y, "group: fusebox-soak") ||
		!strings.Contains(y, "checkpoint_every: 10s") || !strings.Contains(y, "  pprof: true\n") {
		t.Errorf("rendered the demo's file: %v\n%s", err, y)
	}
	if _, err := render("slos: []", nil, ""); !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), "{{brokers}}") {
		t.Errorf("no placeholder: %v", err)
	}
}
