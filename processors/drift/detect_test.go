package drift

import (
	"fmt"
	"testing"
	"time"
)

// changeAt is where the studied changes start: after the 1 h reference
// window and the 5 min current window have filled, at a seed-dependent
// offset inside the minute (changes do not wait for an evaluation).
func changeAt(seed uint64) time.Duration {
	return 66*time.Minute + time.Duration(seed*7919%60)*time.Second
}

// changeCase is one change kind at one rate, with the targets:
// detected in at least minHits of the seeds within within, median delay
// at most maxMedian (0: not asserted).
type changeCase struct {
	name      string
	perMin    float64
	change    change
	within    time.Duration
	minHits   int
	maxMedian time.Duration
}

// studyCases are the targets: the mean shifts at 200/min with
// River ADWIN's median delays as the bound, the 5% bad slice within 10
// minutes in 29 of 30 seeds, a −0.05 shift at 20/min within 30 minutes in
// 27 of 30, the variance change caught.
var studyCases = []changeCase{
	{"shift -0.05 at 200/min", 200, meanShift(-0.05), 30 * time.Minute, 30, 102 * time.Second}, // ADWIN 1.7 min
	{"shift -0.10 at 200/min", 200, meanShift(-0.10), 30 * time.Minute, 30, 42 * time.Second},  // ADWIN 0.7
	{"shift -0.20 at 200/min", 200, meanShift(-0.20), 30 * time.Minute, 30, 24 * time.Second},  // ADWIN 0.4
	{"5% slice to 0.3 at 200/min", 200, badSlice(0.05), 10 * time.Minute, 29, 0},
	{"shift -0.05 at 20/min", 20, meanShift(-0.05), 30 * time.Minute, 27, 0},
	{"sd x2 at 200/min", 200, varianceUp(2), 30 * time.Minute, 30, 0},
}

// runCase runs c over seeds 1..n: hits within c.within, the delays (-1:
// missed), and the false alarms before the change.
func runCase(cfg Config, c changeCase, n int) (hits int, delays []time.Duration, falseAlarms int) {
	for seed := uint64(1); seed <= uint64(n); seed++ {
		at := changeAt(seed)
		o := detect(cfg, scoreStream{seed: seed, perMin: c.perMin, change: c.change, changeAt: at}, at+c.within)
		delays = append(delays, o.delay)
		if o.delay >= 0 && o.delay <= c.within {
			hits++
		}
		for _, n := range o.falseEp {
			falseAlarms += n
		}
	}
	return hits, delays, falseAlarms
}

// TestDetectionTargets: the defaults meet the detection targets
// on 30 seeds per change (the change after 66 minutes of clean traffic,
// the run ending at the change plus the target's time), with no breach
// before the change. On main (ks only, alpha 1e-5, 3 in a row, min_effect
// 0.1) the shifts took 3-5 minutes and the slice was never caught.
func TestDetectionTargets(t *testing.T) {
	cfg := DefaultConfig()
	for _, c := range studyCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // independent runs: seconds of CPU each
			hits, delays, fa := runCase(cfg, c, 30)
			med := median(delays)
			t.Logf("%s: %d/30 within %v, median delay %v, %d false alarms before the change", c.name, hits, c.within, med, fa)
			if hits < c.minHits {
				t.Errorf("detected in %d of 30 seeds within %v, want at least %d (delays %v)", hits, c.within, c.minHits, delays)
			}
			if c.maxMedian > 0 && (med < 0 || med > c.maxMedian) {
				t.Errorf("median delay %v, want at most %v", med, c.maxMedian)
			}
			if fa != 0 {
				t.Errorf("%d breach episodes before the change", fa)
			}
		})
	}
}

// TestNoFalseAlarmsOnCleanStreams: a key-day each of stationary traffic
// at 200/min and of non-stationary traffic (the daily cycle from 10% to
// 100% of 200/min with 4x bursts, the mean score moving ±0.02 over the
// day), and 4 key-days at 20/min, every detector at its defaults: no
// breach at all.
func TestNoFalseAlarmsOnCleanStreams(t *testing.T) {
	streams := []scoreStream{
		{seed: 101, perMin: 200},
		{seed: 102, perMin: 200, rateAt: dailyCycle, meanAt: dailyMean},
	}
	// A low-rate key, where the reference's sampling error matters most
	// (the cusum's and slice's margins): 4 key-days at 20/min.
	for d := range uint64(4) {
		streams = append(streams, scoreStream{seed: 110 + d, perMin: 20})
	}
	for _, s := range streams {
		o := detect(DefaultConfig(), s, 24*time.Hour)
		if len(o.falseEp) != 0 {
			t.Errorf("clean stream (%g/min, daily cycle %v): breach episodes %v", s.perMin, s.rateAt != nil, o.falseEp)
		}
	}
}

// BenchmarkDetectionStudy prints the study's table: per change kind and
// rate, detections within 30 minutes of 30 seeds and the median delay;
// and the breach episodes on 40 clean key-days of each kind (stationary
// and non-stationary at 200/min, stationary at 20/min). go test ./processors/drift -run '^$' -bench
// DetectionStudy -benchtime 1x (a few minutes of one core).
func BenchmarkDetectionStudy(b *testing.B) {
	cfg := DefaultConfig()
	all := append(studyCases,
		changeCase{"shift -0.10 at 20/min", 20, meanShift(-0.10), 30 * time.Minute, 0, 0},
		changeCase{"2 h decline of -0.2 at 200/min", 200, slowDecline(-0.2, 2*time.Hour), 30 * time.Minute, 0, 0},
		changeCase{"2 h decline of -0.2 at 20/min", 20, slowDecline(-0.2, 2*time.Hour), 30 * time.Minute, 0, 0},
		changeCase{"5% slice to 0.3 at 20/min", 20, badSlice(0.05), 30 * time.Minute, 0, 0},
		changeCase{"sd x2 at 20/min", 20, varianceUp(2), 30 * time.Minute, 0, 0},
	)
	for range b.N {
		for _, c := range all {
			c.within = 30 * time.Minute
			hits, delays, fa := runCase(cfg, c, 30)
			fmt.Printf("| %s | %d/30 | %.2f min | %d |\n", c.name, hits, median(delays).Minutes(), fa)
		}
		for _, kind := range []string{"stationary", "non-stationary", "stationary at 20/min"} {
			eps := map[string]int{}
			for day := uint64(0); day < 40; day++ {
				s := scoreStream{seed: 1000 + day, perMin: 200}
				switch kind {
				case "non-stationary":
					s.rateAt, s.meanAt = dailyCycle, dailyMean
				case "stationary at 20/min":
					s.perMin = 20
				}
				for m, n := range detect(cfg, s, 24*time.Hour).falseEp {
					eps[m] += n
				}
			}
			fmt.Printf("%s: 40 key-days, breach episodes %v\n", kind, eps)
		}
	}
}
