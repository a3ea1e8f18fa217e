package study

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStreamFileFormat: the bytes WriteCalls writes for three calls are
// testing/driftpeers/tests/testdata/three.bin, which the Python harness's
// test reads back as the same doubles: both sides read one format.
func TestStreamFileFormat(t *testing.T) {
	calls := []Call{{0, 0.5}, {int64(1500 * time.Millisecond), 0.8125}, {int64(time.Minute), 0.1}}
	var b bytes.Buffer
	if err := WriteCalls(&b, calls); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../../../testing/driftpeers/tests/testdata/three.bin")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Fatalf("WriteCalls wrote\n%x\nthe Python harness's three.bin is\n%x", b.Bytes(), want)
	}
	p := filepath.Join(t.TempDir(), "x.bin")
	if err := os.WriteFile(p, b.Bytes()[:40], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCalls(p); err == nil || !strings.Contains(err.Error(), "whole number") {
		t.Errorf("a torn file read without the error: %v", err)
	}
}

// TestGenerate checks each change kind's score before and after the
// change on one 200/min stream, and the arrival rate, against the
// definitions (docs/drift-peers.md), and that a stream is reproducible.
func TestGenerate(t *testing.T) {
	specs, err := StreamsConfig{Rates: []float64{200}, Seeds: 1, KeyDays: 1}.Specs()
	if err != nil {
		t.Fatal(err)
	}
	type moments struct{ n, mean, sd, low float64 } // low: share below 0.5
	stat := func(cs []Call, from, to float64) moments {
		var m moments
		var s2 float64
		for _, c := range cs {
			if ts := float64(c.T) / 1e9; ts >= from && ts < to {
				m.n++
				m.mean += c.Score
				s2 += c.Score * c.Score
				if c.Score < 0.5 {
					m.low++
				}
			}
		}
		m.mean /= m.n
		m.sd = math.Sqrt(s2/m.n - m.mean*m.mean)
		m.low /= m.n
		return m
	}
	// After the change: mean, sd and share below 0.5 of the last 30
	// minutes of the stream (30-60 minutes after the change: the 2-hour
	// decline has fallen by 0.05-0.10 then, 0.075 on average).
	want := map[string]moments{
		KindShift05: {mean: 0.75, sd: 0.1}, KindShift10: {mean: 0.70, sd: 0.1}, KindShift20: {mean: 0.60, sd: 0.1},
		KindDecline: {mean: 0.725, sd: 0.1}, KindVariance: {mean: 0.8, sd: 0.15},
		KindSlice: {mean: 0.95*0.8 + 0.05*0.3, sd: math.Sqrt(0.95*0.01 + 0.05*0.0025 + 0.95*0.05*0.25), low: 0.05 + 0.95*0.0042},
	}
	for _, s := range specs {
		cs := Generate(s)
		if s.Clean() {
			if days := float64(len(cs)) / (s.RatePerMinute * s.DurationS / 60); math.Abs(days-1) > 0.05 {
				t.Errorf("%s: %d calls, %.3f of the rate's", s.Name, len(cs), days)
			}
			continue
		}
		if n := float64(len(cs)); math.Abs(n-36000)/36000 > 0.02 {
			t.Errorf("%s: %d calls in 3h at 200/min, want 36,000 ± 2%%", s.Name, len(cs))
		}
		before := stat(cs, 0, s.ChangeAtS)
		if math.Abs(before.mean-0.8) > 0.003 || math.Abs(before.sd-0.1) > 0.003 {
			t.Errorf("%s before the change: mean %.4f sd %.4f, want 0.8 and 0.1", s.Name, before.mean, before.sd)
		}
		after := stat(cs, s.DurationS-1800, s.DurationS)
		w := want[s.Kind]
		if math.Abs(after.mean-w.mean) > 0.006 || math.Abs(after.sd-w.sd) > 0.006 {
			t.Errorf("%s after the change: mean %.4f sd %.4f, want %.4f and %.4f", s.Name, after.mean, after.sd, w.mean, w.sd)
		}
		if s.Kind == KindSlice && math.Abs(after.low-w.low) > 0.01 {
			t.Errorf("%s: %.4f of calls below 0.5 after the change, want %.4f", s.Name, after.low, w.low)
		}
		if again := Generate(s); len(again) != len(cs) || again[len(cs)/2] != cs[len(cs)/2] {
			t.Errorf("%s is not reproducible", s.Name)
		}
	}
}

// TestTabulate is the Python harness's test_tabulate on the same hand-made
// alarms: both sides account alike.
func TestTabulate(t *testing.T) {
	ch := func(seed uint64) StreamSpec {
		return StreamSpec{Kind: KindShift05, RatePerMinute: 200, Seed: seed, ChangeAtS: 7200, DurationS: 10800, Calls: 36000}
	}
	m := Manifest{DetectWithinS: 1800, Streams: []StreamSpec{ch(1), ch(2), ch(3),
		{Kind: KindStationary, RatePerMinute: 200, ChangeAtS: -1, CountFromS: 3600, DurationS: 3600 + 2*86400, Calls: 576000}}}
	d := DetectorResult{Detector: "d", Streams: []Alarms{
		{Times: []float64{7260}, CPUNs: 3_600_000}, {Times: []float64{100, 9200}, CPUNs: 3_600_000}, {CPUNs: 3_600_000},
		{Times: []float64{1000, 5000, 90000}, CPUNs: 576_000_000}}}
	tab := Tabulate(m, []DetectorResult{d})
	if len(tab.Rows) != 2 {
		t.Fatalf("%d rows, want 2", len(tab.Rows))
	}
	s, c := tab.Rows[0], tab.Rows[1]
	if s.Seeds != 3 || s.Within30 != 1 || s.Within60 != 2 || s.PreChange != 1 || s.MedianDelayS != 2000 || s.CPUNsPerCall != 100 {
		t.Errorf("change row %+v, want 3 seeds, 1 within 30 min, 2 within 60, 1 early, median 2000 s, 100 ns/call", s)
	}
	if c.FalseAlarms != 2 || c.KeyDays != 2 || c.PerDay != 1 || math.Abs(c.PerDayU-3.6124) > 1e-4 || c.CPUNsPerCall != 1000 {
		t.Errorf("clean row %+v, want 2 false alarms in 2 key-days, 1 [3.6124] per key-day, 1000 ns/call", c)
	}
	if r, u := PoissonUpper(0, 40); r != 0 || math.Abs(u-0.0922) > 1e-4 {
		t.Errorf("0 in 40 key-days: %v [%v], want 0 [0.0922]", r, u)
	}
}

// TestDriftPeersShort runs the fusebox side end to end on two streams
// written to disk, with both default SLO files: the KS test as main
// defaulted before the sequential detectors catches a -0.20 mean shift at
// 200 calls/min within 10 minutes (it takes 3) but never the 5% slice
// (KS distance 0.05 < min_effect 0.1: the gap), and the defaults
// (KS, CUSUM and the slice test) catch both, the slice within 10
// minutes; nothing alarms before the change.
func TestDriftPeersShort(t *testing.T) {
	dir := t.TempDir()
	m, err := WriteStreams(dir, StreamsConfig{Rates: []float64{200}, Seeds: 1, Kinds: []string{KindShift20, KindSlice}})
	if err != nil {
		t.Fatal(err)
	}
	_, dets, tab, err := DriftPeers(DriftPeersConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := tab.Print(&out); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	rows := map[string]PeerRow{}
	for _, r := range tab.Rows {
		rows[r.Kind+" "+r.Detector] = r
	}
	check := func(kind, det string, caughtWithin float64) {
		t.Helper()
		r, ok := rows[kind+" fusebox "+det]
		switch {
		case !ok:
			t.Errorf("no row %s %s (detectors %d)", kind, det, len(dets))
		case r.PreChange != 0:
			t.Errorf("%s %s: an alarm before the change", kind, det)
		case caughtWithin == 0 && r.Within60 != 0:
			t.Errorf("%s %s caught it (delay %.0f s): the table no longer shows the issue's gap", kind, det, r.MedianDelayS)
		case caughtWithin > 0 && !(r.MedianDelayS <= caughtWithin):
			t.Errorf("%s %s: delay %.0f s, want at most %.0f s", kind, det, r.MedianDelayS, caughtWithin)
		}
	}
	check(KindShift20, "drift-ks-only-before/ks_confidence", 600)
	check(KindSlice, "drift-ks-only-before/ks_confidence", 0)
	check(KindShift20, "drift-defaults/any", 600)
	check(KindSlice, "drift-defaults/any", 600)
	check(KindSlice, "drift-defaults/slice_confidence", 600)
	if r := rows[KindShift20+" fusebox drift-defaults/any"]; r.CPUNsPerCall <= 0 || tab.Calls != int64(m.Streams[0].Calls+m.Streams[1].Calls) {
		t.Errorf("cpu %v ns/call over %d calls", r.CPUNsPerCall, tab.Calls)
	}
}
