package calibrate

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/schemas"
)

func is(k schemas.Key) func(schemas.Key) bool { return func(x schemas.Key) bool { return x == k } }

// slowTail: 5% of the calls take 8x as long.
func slowTail(r *rand.Rand, s *schemas.Span) {
	if r.Float64() < 0.05 {
		s.StartUnixNano = s.EndUnixNano - 8*(s.EndUnixNano-s.StartUnixNano)
	}
}

// failing: 60% of the calls fail fast.
func failing(r *rand.Rand, s *schemas.Span) {
	if r.Float64() < 0.6 {
		s.Error, s.ErrorType = true, "provider_unavailable"
		s.StartUnixNano = s.EndUnixNano - 50e6
	}
}

// lowConfidence: the canary's confidence drops by 0.25.
func lowConfidence(_ *rand.Rand, s *schemas.Span) { s.Confidence = clamp01(s.Confidence - 0.25) }

// TestCalibrateShapes is the item 4: for each traffic shape the
// generator does not make, calibrate on 2 h of clean traffic, then run the
// proposed file on another 2 h of clean traffic (no trip at all, no
// scale-out verdict of the proposed scaling thresholds) and on
// 2 h with scripted incidents (every incident commanded by the breaker
// rule of the processor that should see it), and log the detection delay
// in evaluations.
func TestCalibrateShapes(t *testing.T) {
	m := time.Minute
	cases := []struct {
		sh   shape
		incs []incident
	}{
		{timeoutShape(), []incident{
			{"latency tail", "tail", 20 * m, 80 * m, is(key("acme", "chat", "gpt-4o", "baseline")), slowTail},
			{"provider errors", "burnrate", 30 * m, 100 * m, is(key("acme", "chat", "claude-3-7", "baseline")), failing},
			{"canary confidence", "drift", 40 * m, 100 * m, is(key("acme", "chat", "llama-3-70b", "canary")), lowConfidence},
		}},
		{zipfShape(), []incident{
			{"latency tail", "tail", 20 * m, 80 * m, is(key("t01", "search", "gpt-4o-mini", "baseline")), slowTail},
			{"provider errors", "burnrate", 30 * m, 100 * m, is(key("t02", "search", "claude-3-5-haiku", "baseline")), failing},
		}},
		{burstyShape(), []incident{
			// Starts in a burst (0-20m, 40-60m, 80-100m are bursts).
			{"latency tail", "tail", 40 * m, 60 * m, is(key("initech", "chat", "gpt-4o", "baseline")), slowTail},
			{"provider errors", "burnrate", 80 * m, 100 * m, is(key("initech", "batch", "gpt-4o", "baseline")), failing},
		}},
		{heterogeneousShape(), []incident{
			// A fast tenant's tail: the budget the slow tenant drives must
			// not hide it.
			{"latency tail", "tail", 20 * m, 80 * m, is(key("acme", "chat", "gpt-4o", "baseline")), slowTail},
		}},
		{outlierShape(), []incident{
			{"latency tail", "tail", 20 * m, 80 * m, is(key("globex", "chat", "gpt-4o", "baseline")), slowTail},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.sh.name, func(t *testing.T) {
			train := tc.sh.generate(t, 1, 2*time.Hour, nil)
			p, err := Propose(train, Config{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := config.Parse("proposed.yaml", []byte(p.YAML)); err != nil {
				t.Fatalf("proposed file does not load: %v\n%s", err, p.YAML)
			}
			clean, err := RunFile("proposed/clean", []byte(p.YAML), tc.sh.generate(t, 2, 2*time.Hour, nil))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			clean.Print(&out)
			if n := clean.Trips(); n != 0 {
				t.Errorf("%d trips on clean traffic:\n%s", n, out.String())
			}
			// Warn means something: a clean key of another seed is ok in
			// at least 99% of its judged tail evaluations.
			judgedTail, warnTail := 0, 0
			for _, s := range clean.SLOs {
				if s.Processor == "tail" {
					judgedTail += s.ByStatus[schemas.StatusOK] + s.ByStatus[schemas.StatusWarn] + s.ByStatus[schemas.StatusBreach]
					warnTail += s.ByStatus[schemas.StatusWarn]
				}
			}
			t.Logf("%s: clean traffic of another seed: tail warn in %d of %d judged evaluations", tc.sh.name, warnTail, judgedTail)
			if judgedTail == 0 || float64(warnTail) > 0.01*float64(judgedTail) {
				t.Errorf("tail: %d warn of %d judged evaluations on clean traffic: want at most 1%%", warnTail, judgedTail)
			}
			// The proposed scaling thresholds (verdicts only, no rule):
			// no clean window of another seed is a scale-out.
			judged := false
			for _, s := range clean.SLOs {
				if s.Processor == "scaling" {
					judged = s.ByStatus[schemas.StatusOK] > 0
					if n := s.ByStatus[schemas.StatusBreach]; n != 0 {
						t.Errorf("%s: %d scale-out verdicts on clean traffic", s.SLO, n)
					}
				}
			}
			if !judged {
				t.Errorf("no scaling SLO judged the clean traffic:\n%s", out.String())
			}
			inc, err := RunFile("proposed/incidents", []byte(p.YAML), tc.sh.generate(t, 3, 2*time.Hour, tc.incs))
			if err != nil {
				t.Fatal(err)
			}
			inc.Print(&out)
			for _, ic := range tc.incs {
				found := false
				for _, s := range inc.SLOs {
					if s.Processor != ic.processor {
						continue
					}
					for _, tg := range s.TripTargets {
						if ic.match(tg) {
							found = true
							delay := time.Duration(s.FirstTrip - shapeStart.Add(ic.start).UnixNano())
							t.Logf("%s / %s: %s commanded by %s, first trip %s after the start (%d evaluations of 1m)",
								tc.sh.name, ic.name, ic.processor, s.SLO, delay, int(delay/time.Minute))
						}
					}
				}
				if !found {
					t.Errorf("incident %q was not commanded by %s", ic.name, ic.processor)
				}
			}
			t.Logf("proposal:\n%s\n%s\n%s", strings.Join(p.Notes, "\n"), p.YAML, out.String())
		})
	}
}

// TestCalibrateDeterministic: the same records in another order (lines
// reversed) give the same proposal, byte for byte, and the same replay.
func TestCalibrateDeterministic(t *testing.T) {
	sh := burstyShape()
	file := sh.file(5, time.Hour, nil)
	lines := bytes.Split(bytes.TrimSpace(file), []byte("\n"))
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	read := func(b []byte) *Input {
		var in Input
		if err := in.ReadOTLPJSONLines(bytes.NewReader(b), "f", schemas.DefaultAttributeNames(), schemas.Limits{}); err != nil {
			t.Fatal(err)
		}
		in.Sort()
		return &in
	}
	a, b := read(file), read(bytes.Join(lines, []byte("\n")))
	pa, err := Propose(a, Config{})
	if err != nil {
		t.Fatal(err)
	}
	pb, err := Propose(b, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if pa.YAML != pb.YAML {
		t.Fatalf("proposals differ:\n%s\n---\n%s", pa.YAML, pb.YAML)
	}
	ra, err := RunFile("p", []byte(pa.YAML), a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := RunFile("p", []byte(pb.YAML), b)
	if err != nil {
		t.Fatal(err)
	}
	var oa, ob bytes.Buffer
	ra.Print(&oa)
	rb.Print(&ob)
	if oa.String() != ob.String() {
		t.Errorf("replays differ:\n%s\n%s", oa.String(), ob.String())
	}
}

func TestProposeRejectsEmptyInput(t *testing.T) {
	if _, err := Propose(&Input{}, Config{}); err != ErrNoTraffic {
		t.Errorf("empty input: %v, want ErrNoTraffic", err)
	}
}

func TestRounding(t *testing.T) {
	for _, c := range []struct {
		f       func(float64) float64
		x, want float64
	}{
		{roundUp2, 3471, 3500}, {roundUp2, 3500, 3500}, {roundUp2, 0.01234, 0.013},
		{niceUp, 0.0198, 0.02}, {niceUp, 0.004, 0.005}, {niceUp, 0.011, 0.02}, {niceUp, 0.06, 0.1},
		{roundDown1, 2.08e-6, 2e-6}, {roundDown1, 3.47e-6, 3e-6},
	} {
		if got := c.f(c.x); math.Abs(got-c.want) > 1e-12*c.want {
			t.Errorf("round(%v) = %v, want %v", c.x, got, c.want)
		}
	}
}

// TestProposalReplaysCleanOnItsRecording is issue 24's "its replay on the
// recording it was made from shows 0 trips, always": on every shape the
// tests know — including one tenant at 2x the others' latency and
// isolated calls near the timeout — the proposal run on its own recording
// trips nothing and no tail SLO warns or breaches (budgets lie above every
// key's every window), and the notes say which key drives a budget.
func TestProposalReplaysCleanOnItsRecording(t *testing.T) {
	for _, sh := range []shape{timeoutShape(), zipfShape(), burstyShape(), heterogeneousShape(), outlierShape()} {
		t.Run(sh.name, func(t *testing.T) {
			in := sh.generate(t, 11, 2*time.Hour, nil)
			p, err := Propose(in, Config{})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := RunFile("proposed/own", []byte(p.YAML), in)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			rep.Print(&out)
			if n := rep.Trips(); n != 0 {
				t.Errorf("%d trips on the recording the proposal was made from:\n%s\n%s", n, p.YAML, out.String())
			}
			for _, s := range rep.SLOs {
				if s.Processor == "tail" && s.ByStatus[schemas.StatusWarn]+s.ByStatus[schemas.StatusBreach] != 0 {
					t.Errorf("%s: %d warn and %d breach on its own recording", s.SLO, s.ByStatus[schemas.StatusWarn], s.ByStatus[schemas.StatusBreach])
				}
			}
			if sh.name == "one-tenant-2x" && !strings.Contains(strings.Join(p.Notes, "\n"), "driven by slowco/") {
				t.Errorf("no note names the slow tenant as the budgets' driver:\n%s", strings.Join(p.Notes, "\n"))
			}
		})
	}
}

// TestIdenticalTenantsNotSplit: tenants of one latency distribution (the
// isolated-extreme-calls shape: four tenants, one law) get no SLO of
// their own, on any of three recordings; the 2x-slow tenant's shape does
// split, naming the five fast tenants.
func TestIdenticalTenantsNotSplit(t *testing.T) {
	same, slow := outlierShape(), heterogeneousShape()
	for seed := uint64(1); seed <= 3; seed++ {
		p, err := Propose(same.generate(t, seed, 2*time.Hour, nil), Config{})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(p.YAML, "-tenants") {
			t.Errorf("seed %d: tenants of one distribution split:\n%s", seed, p.YAML)
		}
	}
	p, err := Propose(slow.generate(t, 1, 2*time.Hour, nil), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.YAML, `tenant: ["acme", "globex", "hooli", "initech", "umbrella"]`) {
		t.Errorf("the 2x-slow tenant's shape did not split off the five fast tenants:\n%s", p.YAML)
	}
}
