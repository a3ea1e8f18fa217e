package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fusebox-dev/fusebox/cmd/fusebox/internal/study"
)

// benchDriftPeers writes the drift-peers streams and runs the drift
// processor over them (docs/drift-peers.md); scripts/drift-peers runs the
// Python peers on the same files.
func benchDriftPeers(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench drift-peers", "[flags]",
		"Writes seeded streams of one key's per-call confidence score (Beta mean 0.8, sd 0.1, Poisson arrivals) into\n"+
			"--dir — mean shifts of -0.05, -0.10, -0.20, a 2-hour decline, a variance change and a 5% bad slice, each\n"+
			"--seeds times per rate, and --key-days of stationary and of non-stationary clean traffic per rate — then runs\n"+
			"the drift processor (the engine's worker, each SLO file its own) over them and prints, per change and rate,\n"+
			"detection within 30 minutes and the median delay, and the false alarms per key-day with the exact 95%\n"+
			"upper bound on the clean streams, and CPU per call. Its results also go to --dir/--results, which\n"+
			"scripts/drift-peers puts beside River's and alibi-detect's (docs/drift-peers.md).", stdout)
	dir := fs.String("dir", ".cache/drift-peers", "directory of the streams (streams.json, one .bin per stream) and fusebox.json")
	rates := fs.String("rates", "200,20", "comma-separated arrival rates, calls/minute")
	seeds := fs.Int("seeds", 30, "seeded streams per change kind and rate")
	keyDays := fs.Int("key-days", 40, "clean key-days per clean kind (stationary, nonstationary) and rate")
	seed := fs.Uint64("seed", 1, "seed of the first stream of each kind and rate")
	kinds := fs.String("kinds", "", "comma-separated stream kinds (default all: "+strings.Join(append(append([]string{}, study.ChangeKinds...), study.CleanKinds...), ", ")+")")
	reuse := fs.Bool("reuse", false, "run over the streams already in --dir instead of writing them")
	var configs stringList
	fs.Var(&configs, "config", "SLO file to run in its own worker, repeatable (default: the drift processor at its defaults, and its KS test alone as it defaulted before the sequential detectors)")
	results := fs.String("results", "fusebox.json", "file in --dir the alarms go to (scripts/drift-peers reads every fusebox*.json)")
	label := fs.String("label", "fusebox", "the detectors' name prefix in the table (e.g. a branch's name beside main's)")
	parallel := fs.Int("parallel", 0, "streams at once (default GOMAXPROCS; the table does not depend on it)")
	progress := fs.Bool("progress", false, "print a line to stderr every 100 streams")
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	if *seeds < 1 || *keyDays < 1 || *parallel < 0 {
		fmt.Fprintln(stderr, "fusebox bench drift-peers: --seeds and --key-days must be at least 1, --parallel not negative")
		return exitUsage
	}
	sc := study.StreamsConfig{Seeds: *seeds, KeyDays: *keyDays, Seed: *seed, Parallel: *parallel}
	for _, s := range strings.Split(*rates, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || !(r > 0) {
			fmt.Fprintf(stderr, "fusebox bench drift-peers: --rates: %q is not a positive rate\n", s)
			return exitUsage
		}
		sc.Rates = append(sc.Rates, r)
	}
	if *kinds != "" {
		for _, k := range strings.Split(*kinds, ",") {
			sc.Kinds = append(sc.Kinds, strings.TrimSpace(k))
		}
	}
	if _, err := sc.Specs(); err != nil {
		fmt.Fprintf(stderr, "fusebox bench drift-peers: --kinds: %v\n", err)
		return exitUsage
	}
	cfg := study.DriftPeersConfig{Dir: *dir, Parallel: *parallel, Label: *label}
	for _, c := range configs {
		b, err := os.ReadFile(c)
		if err != nil {
			fmt.Fprintf(stderr, "fusebox bench drift-peers: %v\n", err)
			return exitUsage
		}
		cfg.SLOFiles = append(cfg.SLOFiles, string(b))
	}
	if !*reuse {
		if _, err := study.WriteStreams(*dir, sc); err != nil {
			fmt.Fprintf(stderr, "fusebox bench drift-peers: %v\n", err)
			return exitFailure
		}
	}
	if *progress {
		cfg.Progress = func(done, total int) {
			if done%100 == 0 || done == total {
				fmt.Fprintf(stderr, "fusebox bench drift-peers: %d of %d stream runs\n", done, total)
			}
		}
	}
	_, dets, tab, err := study.DriftPeers(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "fusebox bench drift-peers: %v\n", err)
		return exitFailure
	}
	if err := writeDetectorResults(filepath.Join(*dir, *results), dets); err != nil {
		fmt.Fprintf(stderr, "fusebox bench drift-peers: %v\n", err)
		return exitFailure
	}
	if err := tab.Print(stdout); err != nil {
		return exitFailure
	}
	return exitOK
}

// writeDetectorResults writes the alarms in the results format the Python
// side reads and writes (testing/driftpeers): {"detectors": [{"detector",
// "streams": [{"alarms_s": [...], "cpu_ns": n}, ...]}]}, streams in the
// manifest's order.
func writeDetectorResults(path string, dets []study.DetectorResult) error {
	type stream struct {
		Alarms []float64 `json:"alarms_s"`
		CPUNs  int64     `json:"cpu_ns"`
	}
	type det struct {
		Detector string   `json:"detector"`
		Streams  []stream `json:"streams"`
	}
	var out struct {
		Detectors []det `json:"detectors"`
	}
	for _, d := range dets {
		x := det{Detector: d.Detector}
		for _, s := range d.Streams {
			x.Streams = append(x.Streams, stream{Alarms: append([]float64{}, s.Times...), CPUNs: s.CPUNs})
		}
		out.Detectors = append(out.Detectors, x)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}
