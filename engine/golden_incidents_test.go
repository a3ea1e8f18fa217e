package engine_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/sim/replay"
	"github.com/fusebox-dev/fusebox/processors/drift"
	"github.com/fusebox-dev/fusebox/schemas"
)

// updateGolden rewrites the golden files under testdata/ instead of
// comparing with them: go test ./engine -run Golden -update
var updateGolden = flag.Bool("update", false, "rewrite engine/testdata golden files")

// goldenRun is the golden scenario through the router's splitters and one
// worker per keyed partition, with every processor of the production SLO
// file; it is computed once per test binary (about 15 s of CPU).
var goldenRun = sync.OnceValues(func() (replay.Result, error) {
	cfg, _, err := replay.Production()
	if err != nil {
		return replay.Result{}, err
	}
	src, err := replay.Generate(replay.GoldenScenario(), replay.Start, replay.GoldenDuration, replay.GenConfig{})
	if err != nil {
		return replay.Result{}, err
	}
	return replay.Drive(cfg, replay.Route(src, replay.RouteConfig{}))
})

// TestGoldenIncidentsAllProcessors: every scripted incident is caught by
// its processor within 2 evaluations of its start, no breach falls on a
// key no incident touches, and the alert stream, the fuse commands and a
// digest of every verdict match testdata/golden_incidents.txt.
func TestGoldenIncidentsAllProcessors(t *testing.T) {
	t.Parallel()
	res, err := goldenRun()
	if err != nil {
		t.Fatal(err)
	}
	_, f, err := replay.Production()
	if err != nil {
		t.Fatal(err)
	}
	sc := replay.GoldenScenario()
	vs := res.Output.Verdicts
	if res.Stats.LateSpans != 0 || res.Stats.LateCorrections != 0 {
		t.Fatalf("in-order traffic gave %d late spans and %d late corrections", res.Stats.LateSpans, res.Stats.LateCorrections)
	}
	for i := range vs {
		if err := vs[i].Validate(); err != nil {
			t.Fatalf("verdict %s %s %s: %v", vs[i].Processor, vs[i].Metric, vs[i].Key.String(), err)
		}
	}

	var detections []replay.Detection
	for _, inc := range sc.Incidents {
		proc := replay.ProcessorFor(inc.Kind)
		slo, every, ok := replay.SLOFor(f, proc)
		if !ok {
			t.Fatalf("incident %q: the SLO file has no %s SLO", inc.Name, proc)
		}
		var metrics []string
		if proc == "corrections" {
			metrics = []string{"correction_rate"} // the spike hits both variants: no canary difference
		}
		d := replay.Detect(vs, replay.Start, inc, proc, every, metrics...)
		detections = append(detections, d)
		switch {
		case !d.Found:
			t.Errorf("incident %q (%s from +%v): SLO %s raised no warn or breach on its keys", inc.Name, inc.Kind, inc.Start, slo)
		case !d.InTime():
			t.Errorf("incident %q (%s from +%v): SLO %s first alarmed at +%s on %s, later than 2 evaluations (+%s)",
				inc.Name, inc.Kind, inc.Start, slo, offset(d.At), d.Key.String(), offset(d.Deadline))
		}
		// The warn is the detection; the breach, which trips the breaker,
		// may follow one evaluation later (the tail's interval must clear
		// the budget, decay's trend become significant), and drift's
		// k-consecutive rule needs consecutive-1 more.
		allow := every
		if proc == "drift" {
			allow = time.Duration(driftConsecutive(t, f)-1) * every
		}
		switch {
		case !d.BreachFound:
			t.Errorf("incident %q (%s from +%v): SLO %s never breached on its keys", inc.Name, inc.Kind, inc.Start, slo)
		case d.BreachAt > d.Deadline+int64(allow):
			t.Errorf("incident %q (%s from +%v): SLO %s first breached at +%s, later than +%s",
				inc.Name, inc.Kind, inc.Start, slo, offset(d.BreachAt), offset(d.Deadline+int64(allow)))
		}
		if d.EarlyBreaches > 0 {
			t.Errorf("incident %q: %d %s breaches on its keys before it started", inc.Name, d.EarlyBreaches, proc)
		}
	}
	firstStart := sc.Incidents[0].Start
	for _, inc := range sc.Incidents {
		firstStart = min(firstStart, inc.Start)
	}
	for i := range vs {
		v := &vs[i]
		if v.Status != schemas.StatusBreach {
			continue
		}
		if v.WindowEndUnixNano <= replay.Start.Add(firstStart).UnixNano() {
			t.Errorf("breach before any incident: %s", verdictLine(v))
			continue
		}
		hit := false
		for _, inc := range sc.Incidents {
			hit = hit || replay.Hits(inc.Target, v.Key)
		}
		if !hit {
			t.Errorf("breach on a key no incident touches: %s", verdictLine(v))
		}
	}
	if len(res.Output.Commands) == 0 {
		t.Error("no fuse command: the breaker saw no incident")
	}
	checkGolden(t, "golden_incidents.txt", goldenText(res, detections))
}

// driftConsecutive is the k of the drift SLO's k-consecutive rule.
func driftConsecutive(t *testing.T, f *config.File) int {
	t.Helper()
	for _, s := range f.SLOs {
		if sec, _ := s.Processor(); sec.Kind.Name == drift.Name {
			return sec.Config.(*drift.Config).Consecutive
		}
	}
	t.Fatal("the SLO file has no drift SLO")
	return 0
}

// goldenText renders a run for the golden file: the detections, the
// verdict counts, every warn and breach, every fuse command, and a digest
// of every verdict line per processor (so a change in any ok verdict shows
// too, without a multi-megabyte file).
func goldenText(res replay.Result, ds []replay.Detection) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# engine golden run: internal/sim/replay production.yaml on GoldenScenario (traffic.Demo seed 42,\n")
	fmt.Fprintf(&b, "# 100 calls/s, plus an error burst), %v of event time from %s, 3 span partitions + 1\n", replay.GoldenDuration, replay.Start.UTC().Format("2006-01-02T15:04Z"))
	fmt.Fprintf(&b, "# correction partition, 4 keyed partitions. Times are offsets from the start. Regenerate: -update.\n")
	fmt.Fprintf(&b, "\n## detection (first warn or breach of the processor on the incident's keys; deadline = 2 evaluations)\n")
	for _, d := range ds {
		at := "none"
		if d.Found {
			at = fmt.Sprintf("+%s %s %s %s", offset(d.At), d.Status, d.Metric, d.Key.String())
		}
		breach := "none"
		if d.BreachFound {
			breach = "+" + offset(d.BreachAt)
		}
		fmt.Fprintf(&b, "%-17s %-16s +%s..+%s %-11s deadline +%s first %s; first breach %s\n", d.Incident.Name, d.Incident.Kind,
			offset(d.Start), offset(replay.Start.Add(d.Incident.End).UnixNano()), d.Processor, offset(d.Deadline), at, breach)
	}
	fmt.Fprintf(&b, "\n## stats\nspans %d late %d corrections %d late %d evaluations %d verdicts %d commands %d\n",
		res.Stats.Spans, res.Stats.LateSpans, res.Stats.Corrections, res.Stats.LateCorrections,
		res.Stats.Evaluations, res.Stats.Verdicts, res.Stats.Commands)

	counts := map[string]int{}
	digests := map[string][]byte{}
	var names []string
	for i := range res.Output.Verdicts {
		v := &res.Output.Verdicts[i]
		k := v.Processor + " " + v.Metric + " " + string(v.Status)
		if counts[k] == 0 {
			names = append(names, k)
		}
		counts[k]++
		digests[v.Processor] = append(digests[v.Processor], verdictLine(v)+"\n"...)
	}
	slices.Sort(names)
	fmt.Fprintf(&b, "\n## verdicts by processor, metric and status\n")
	for _, k := range names {
		fmt.Fprintf(&b, "%s %d\n", k, counts[k])
	}
	fmt.Fprintf(&b, "\n## sha256 of every verdict line, per processor\n")
	procs := make([]string, 0, len(digests))
	for p := range digests {
		procs = append(procs, p)
	}
	slices.Sort(procs)
	for _, p := range procs {
		sum := sha256.Sum256(digests[p])
		fmt.Fprintf(&b, "%s %s\n", p, hex.EncodeToString(sum[:12]))
	}
	fmt.Fprintf(&b, "\n## warn and breach verdicts (keyed partition order, then time)\n")
	for i := range res.Output.Verdicts {
		v := &res.Output.Verdicts[i]
		if v.Status == schemas.StatusWarn || v.Status == schemas.StatusBreach {
			b.WriteString(verdictLine(v) + "\n")
		}
	}
	fmt.Fprintf(&b, "\n## fuse commands\n")
	for i := range res.Output.Commands {
		c := &res.Output.Commands[i]
		reasons := make([]string, len(c.Reasons))
		for j, r := range c.Reasons {
			reasons[j] = r.VerdictID[:12]
		}
		fmt.Fprintf(&b, "+%s %s %s state=%s level=%d v%d expires=+%s fallback=%q throttle=%g reasons=%s\n",
			offset(c.IssuedAtUnixNano), c.Target.String(), c.Action, c.State, c.Level, c.Version,
			offset(c.ExpiresAtUnixNano), c.Fallback, c.ThrottleFraction, strings.Join(reasons, ","))
	}
	return b.Bytes()
}

// verdictLine is one verdict, rounded to 6 significant digits so that the
// golden file does not depend on the last bits of a platform's floating
// point.
func verdictLine(v *schemas.Verdict) string {
	var d strings.Builder
	for i, x := range v.Details {
		if i > 0 {
			d.WriteByte(' ')
		}
		fmt.Fprintf(&d, "%s=%.6g", x.Name, x.Value)
	}
	return fmt.Sprintf("+%s %s %s %s %s %s value=%.6g threshold=%.6g [%.6g, %.6g] n=%d method=%s id=%s {%s}",
		offset(v.WindowEndUnixNano), v.Processor, v.SLO, v.Metric, v.Key.String(), v.Status,
		v.Value, v.Threshold, v.Lower, v.Upper, v.N, v.Method, v.ID[:12], d.String())
}

// offset renders a Unix ns time as minutes (and seconds) after the start.
func offset(t int64) string {
	d := t - replay.Start.UnixNano()
	m, s := d/60e9, (d%60e9)/1e9
	if s == 0 {
		return fmt.Sprintf("%dm", m)
	}
	return fmt.Sprintf("%dm%02ds", m, s)
}

// checkGolden compares got with testdata/name, or writes it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs from line %d:\n got: %s\nwant: %s\n(run with -update to accept)", path, i+1, g, w)
			}
		}
	}
}
