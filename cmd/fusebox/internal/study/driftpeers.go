package study

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/fusebox-dev/fusebox/internal/sim/replay"
	"github.com/fusebox-dev/fusebox/schemas"
)

// DriftPeersSLOFiles are the fusebox side of the drift-peers benchmark,
// each run in its own engine worker (so that each has its own CPU
// figure): the drift processor at its defaults (the KS test, the CUSUM
// and the bad-slice test, levels from a budget of 0.001 false alarms per
// key-day, count-based windows), and as main defaulted before them (the
// KS test alone, 5-minute window against the previous hour, alpha 1e-5,
// 3 in a row, min_effect 0.1, no window growth). Each SLO and verdict
// metric is a row of the table, and each SLO's detectors together a row
// "<slo>/any".
var DriftPeersSLOFiles = []string{
	driftSLOFile("drift-defaults", "{metric: confidence}"),
	driftSLOFile("drift-ks-only-before", "{metric: confidence, detectors: [ks], alpha: 1e-5, consecutive: 3, min_effect: 0.1, max_window: 5m}"),
}

// driftSLOFile is an SLO file of one drift SLO of the given section.
func driftSLOFile(name, section string) string {
	return `version: drift-peers-` + name + `
keys:
  dimensions: [tenant, service, model, variant]
slos:
  - name: ` + name + `
    drift: ` + section + `
`
}

// DriftPeersConfig configures DriftPeers. Zero fields take defaults.
type DriftPeersConfig struct {
	// Dir holds the streams (streams.json and the .bin files).
	Dir string
	// SLOFiles are the SLO files run (YAML), each in its own worker.
	// Default DriftPeersSLOFiles.
	SLOFiles []string
	// Parallel is how many streams run at once. Default GOMAXPROCS; the
	// table does not depend on it (but the CPU figures do a little).
	Parallel int
	// Label prefixes the detectors' names ("<Label> <slo>/<metric>").
	// Default "fusebox".
	Label string
	// Progress, when set, is called after each stream (from its goroutine).
	Progress func(done, total int)
}

// Alarms is what one detector did on one stream: its alarm times in
// seconds from the stream's start, and the CPU it took.
type Alarms struct {
	Times []float64
	CPUNs int64
}

// DetectorResult is one detector's alarms per stream (by the manifest's
// order).
type DetectorResult struct {
	Detector string
	Streams  []Alarms
}

// PeerRow is one detector on one (kind, rate) of the table.
type PeerRow struct {
	Detector string
	Kind     string
	Rate     float64
	// Change kinds: Seeds streams, Within30 of them with a first alarm at
	// or after the change within DetectWithin, Within60 within the whole
	// horizon; MedianDelayS is the median over all seeds of the delay,
	// a miss counting as +Inf (so +Inf when half or more missed);
	// PreChange counts streams with an alarm before the change.
	Seeds, Within30, Within60, PreChange int
	MedianDelayS                         float64
	// Clean kinds: FalseAlarms in KeyDays counted key-days, their rate
	// per key-day and the exact (Garwood) 95% upper bound.
	FalseAlarms     int
	KeyDays         float64
	PerDay, PerDayU float64
	// CPUNsPerCall is the detector's CPU over every stream of this rate
	// and kind divided by their calls.
	CPUNsPerCall float64
}

// PeersTable is the benchmark's table.
type PeersTable struct {
	Rows []PeerRow
	// ProcessNsPerCall is the process CPU of the whole fusebox run (GC
	// and file reading included) over all calls; 0 for the peers.
	ProcessNsPerCall float64
	Calls            int64
}

// DriftPeers runs the SLO file's processors — the engine's worker, as
// `fusebox run` runs them — over every stream of cfg.Dir and returns, per
// drift SLO and verdict metric, the times of its breach episodes (a breach
// verdict whose previous verdict of that SLO and metric was not one), at
// the verdict's evaluation time (its window end).
func DriftPeers(cfg DriftPeersConfig) (Manifest, []DetectorResult, PeersTable, error) {
	if cfg.Label == "" {
		cfg.Label = "fusebox"
	}
	if len(cfg.SLOFiles) == 0 {
		cfg.SLOFiles = DriftPeersSLOFiles
	}
	m, err := ReadManifest(cfg.Dir)
	if err != nil {
		return m, nil, PeersTable{}, err
	}
	for _, f := range cfg.SLOFiles {
		if _, _, err := replay.ParseWorkerConfig("drift-peers.yaml", []byte(f)); err != nil {
			return m, nil, PeersTable{}, err
		}
	}
	nf := len(cfg.SLOFiles)
	per := make([]map[string]*Alarms, len(m.Streams)*nf)
	var mu sync.Mutex
	done := 0
	cpu0 := processCPU()
	err = parallelEach(len(per), cfg.Parallel, func(i int) error {
		var err error
		per[i], err = runFuseboxStream(cfg.Label, cfg.SLOFiles[i%nf], filepath.Join(cfg.Dir, m.Streams[i/nf].File))
		if cfg.Progress != nil {
			mu.Lock()
			done++
			cfg.Progress(done, len(per))
			mu.Unlock()
		}
		return err
	})
	cpu := processCPU() - cpu0
	if err != nil {
		return m, nil, PeersTable{}, err
	}
	names := map[string]bool{}
	for _, p := range per {
		for d := range p {
			names[d] = true
		}
	}
	var dets []DetectorResult
	for _, d := range slices.Sorted(func(yield func(string) bool) {
		for n := range names {
			if !yield(n) {
				return
			}
		}
	}) {
		r := DetectorResult{Detector: d, Streams: make([]Alarms, len(m.Streams))}
		for i, p := range per {
			if a := p[d]; a != nil {
				r.Streams[i/nf] = *a
			}
		}
		dets = append(dets, r)
	}
	tab := Tabulate(m, dets)
	for _, s := range m.Streams {
		tab.Calls += int64(s.Calls)
	}
	if tab.Calls > 0 && cpu > 0 {
		tab.ProcessNsPerCall = float64(cpu) / float64(tab.Calls)
	}
	return m, dets, tab, nil
}

// runFuseboxStream streams one file's calls, one second per batch, as
// spans of one key through one engine worker, and returns each drift
// SLO/metric's alarms. The worker's thread CPU (batch building included,
// the garbage collector's other threads not) is charged to every verdict
// metric of the file (one, for one drift SLO).
func runFuseboxStream(label, sloFile, path string) (map[string]*Alarms, error) {
	calls, err := ReadCalls(path)
	if err != nil {
		return nil, err
	}
	wc, _, err := replay.ParseWorkerConfig("drift-peers.yaml", []byte(sloFile))
	if err != nil {
		return nil, err
	}
	start := StreamStart.UnixNano()
	key := schemas.Key{Tenant: "acme", Service: "chat", Model: "gpt-4o", Variant: "prod"}
	out := map[string]*Alarms{}
	last := map[string]bool{}
	batch := make([]schemas.Span, 0, 256)
	next := 0
	sec := int64(0)
	var id [8]byte
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	_, err = replay.StreamBatches(wc, func() ([]schemas.Span, []schemas.Correction, bool) {
		if next >= len(calls) {
			return nil, nil, false
		}
		sec++
		batch = batch[:0]
		for ; next < len(calls) && calls[next].T < sec*int64(time.Second); next++ {
			end := start + calls[next].T
			binary.LittleEndian.PutUint64(id[:], uint64(next+1))
			s := schemas.Span{StartUnixNano: end - int64(400*time.Millisecond), EndUnixNano: end, DurationMs: 400,
				Key: key, Operation: "chat", Confidence: calls[next].Score, Has: schemas.HasConfidence}
			copy(s.SpanID[:], id[:])
			copy(s.TraceID[:], id[:])
			batch = append(batch, s)
		}
		return batch, nil, true
	}, func(o schemas.Output) {
		for i := range o.Verdicts {
			v := &o.Verdicts[i]
			if v.Processor != "drift" || v.Status == schemas.StatusInsufficientData {
				continue
			}
			d := label + " " + v.SLO + "/" + v.Metric
			a := out[d]
			if a == nil {
				a = &Alarms{}
				out[d] = a
			}
			breach := v.Status == schemas.StatusBreach
			if breach && !last[d] {
				a.Times = append(a.Times, float64(v.WindowEndUnixNano-start)/1e9)
			}
			last[d] = breach
		}
	})
	cpu := threadCPU() - cpu0
	// An SLO with several verdict metrics (detectors) also gets the row
	// "<slo>/any": every metric's alarms together, what the SLO's breaches
	// are to a breaker rule that names no metric.
	bySLO := map[string][]string{}
	for d := range out {
		slo := d[:strings.LastIndexByte(d, '/')]
		bySLO[slo] = append(bySLO[slo], d)
	}
	for slo, ds := range bySLO {
		if len(ds) < 2 {
			continue
		}
		union := &Alarms{}
		for _, d := range ds {
			union.Times = append(union.Times, out[d].Times...)
		}
		slices.Sort(union.Times)
		out[slo+"/any"] = union
	}
	for _, a := range out {
		a.CPUNs = cpu
	}
	return out, err
}

// Tabulate turns each detector's alarms into the table's rows: per
// detector, kind and rate, detection within the manifest's DetectWithinS
// and the median delay (change kinds), false alarms per key-day (clean).
func Tabulate(m Manifest, dets []DetectorResult) PeersTable {
	type cell struct {
		kind string
		rate float64
	}
	var cells []cell
	seen := map[cell]bool{}
	for _, s := range m.Streams {
		c := cell{s.Kind, s.RatePerMinute}
		if !seen[c] {
			seen[c] = true
			cells = append(cells, c)
		}
	}
	var tab PeersTable
	for _, c := range cells {
		for _, d := range dets {
			r := PeerRow{Detector: d.Detector, Kind: c.kind, Rate: c.rate}
			var delays []float64
			var cpu int64
			var calls int
			for i, s := range m.Streams {
				if s.Kind != c.kind || s.RatePerMinute != c.rate {
					continue
				}
				a := d.Streams[i]
				cpu += a.CPUNs
				calls += s.Calls
				if s.Clean() {
					r.KeyDays += (s.DurationS - s.CountFromS) / 86400
					r.FalseAlarms += CountFrom(a.Times, s.CountFromS)
					continue
				}
				r.Seeds++
				delay, pre := FirstAfter(a.Times, s.ChangeAtS)
				if pre {
					r.PreChange++
				}
				if delay <= m.DetectWithinS {
					r.Within30++
				}
				if !math.IsInf(delay, 1) {
					r.Within60++
				}
				delays = append(delays, delay)
			}
			if calls > 0 {
				r.CPUNsPerCall = float64(cpu) / float64(calls)
			}
			if r.KeyDays > 0 {
				r.PerDay, r.PerDayU = PoissonUpper(r.FalseAlarms, r.KeyDays)
			}
			r.MedianDelayS = Median(delays)
			tab.Rows = append(tab.Rows, r)
		}
	}
	return tab
}

// FirstAfter returns the delay from change to the first alarm at or after
// it (+Inf: none) and whether any alarm came before it.
func FirstAfter(times []float64, change float64) (delay float64, pre bool) {
	delay = math.Inf(1)
	for _, t := range times {
		if t < change {
			pre = true
			continue
		}
		return t - change, pre
	}
	return delay, pre
}

// CountFrom counts the alarms at or after from.
func CountFrom(times []float64, from float64) int {
	n := 0
	for _, t := range times {
		if t >= from {
			n++
		}
	}
	return n
}

// Median is the median of xs (+Inf values sort last; the mean of the two
// middle values for an even count, +Inf if either is); NaN for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// PoissonUpper returns k events in t key-days as a rate per key-day and
// the exact 95% upper bound chi2(0.975; 2k+2)/2/t (3.69/t for k = 0).
func PoissonUpper(k int, t float64) (rate, upper float64) {
	r, _, hi := poissonRate(k, t)
	return r / 1000, hi / 1000
}

// Print writes the table: change kinds first (detection and delay), then
// the clean kinds (false alarms), then CPU per call.
func (t PeersTable) Print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "change\tcalls/min\tdetector\tdetected <= 30 min\twithin 60 min\tmedian delay (min)\talarm before change\tcpu ns/call")
	for _, r := range t.Rows {
		if r.Seeds == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%g\t%s\t%d/%d\t%d/%d\t%s\t%d/%d\t%.0f\n", r.Kind, r.Rate, r.Detector,
			r.Within30, r.Seeds, r.Within60, r.Seeds, minutes(r.MedianDelayS), r.PreChange, r.Seeds, r.CPUNsPerCall)
	}
	fmt.Fprintln(tw, "\nclean stream\tcalls/min\tdetector\tfalse alarms\tkey-days\tper key-day [95% upper]\t\tcpu ns/call")
	for _, r := range t.Rows {
		if r.KeyDays == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%g\t%s\t%d\t%.0f\t%.3f [%.3f]\t\t%.0f\n", r.Kind, r.Rate, r.Detector,
			r.FalseAlarms, r.KeyDays, r.PerDay, r.PerDayU, r.CPUNsPerCall)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if t.ProcessNsPerCall > 0 {
		_, err := fmt.Fprintf(w, "\nfusebox process CPU over the whole run (engine worker, every SLO, GC and file reading included): %.0f ns/call over %d calls\n",
			t.ProcessNsPerCall, t.Calls)
		return err
	}
	return nil
}

func minutes(s float64) string {
	switch {
	case math.IsNaN(s):
		return "-"
	case math.IsInf(s, 1):
		return "miss"
	}
	return fmt.Sprintf("%.1f", s/60)
}

// parallelEach runs f(0..n-1) on up to workers goroutines (default
// GOMAXPROCS) and joins the errors.
func parallelEach(n, workers int, f func(i int) error) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, n))
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}
