package pipeline

import (
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/fusebox-dev/fusebox/internal/observe"
	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

// noSamplesWarnEvery is how often, at most, the WARN about one SLO's keys
// that get calls but no samples of its metric is repeated (wall time).
const noSamplesWarnEvery = 10 * time.Minute

// noSamplesWatch makes the verdicts of an SLO that is blind — its matched
// keys get calls but no samples of its metric, the no_samples verdicts of
// tail, drift and decay — loud: a WARN naming the SLO, the metric, the
// calls and the instrumentation scopes seen, the first time per SLO and
// then at most every noSamplesWarnEvery, and the counter
// fusebox_slo_no_samples_total{slo}. The verdicts themselves come from the processor (deterministic,
// in every sink); this is the pipeline's wall-clock side.
type noSamplesWatch struct {
	log *slog.Logger // nil: no lines

	mu     sync.Mutex
	counts map[string]int64     // per SLO: no_samples verdicts
	warned map[string]time.Time // per SLO: the last WARN
}

// observe records the no_samples verdicts among vs.
func (w *noSamplesWatch) observe(vs []schemas.Verdict, now time.Time) {
	for i := range vs {
		v := &vs[i]
		if v.Method != processors.MethodNoSamples {
			continue
		}
		w.mu.Lock()
		if w.counts == nil {
			w.counts, w.warned = map[string]int64{}, map[string]time.Time{}
		}
		w.counts[v.SLO]++
		last, seen := w.warned[v.SLO]
		due := !seen || now.Sub(last) >= noSamplesWarnEvery
		if due {
			w.warned[v.SLO] = now
		}
		w.mu.Unlock()
		if !due || w.log == nil {
			continue
		}
		calls, _ := v.Detail(processors.DetailNoSamplesCalls)
		evals, _ := v.Detail(processors.DetailNoSamplesRun)
		scopes := "unknown"
		if v.Evidence != nil && len(v.Evidence.Scopes) > 0 {
			scopes = strings.Join(v.Evidence.Scopes, ",")
		}
		metric := v.Metric
		if m, ok := processors.MetricOf(v.Metric); ok {
			metric = string(m) // p999_ttft_ms → ttft_ms, decline_alignment → alignment
		}
		w.log.Warn("SLO gets calls but no samples of its metric: it cannot judge them (do the spans carry it? see the instrumentation scopes)",
			"slo", v.SLO, "metric", metric, "key", v.Key.String(), "calls", int64(calls), "evaluations", int64(evals),
			"scopes", scopes, "window_end", time.Unix(0, v.WindowEndUnixNano).UTC().Format(time.RFC3339),
			"repeats_every", noSamplesWarnEvery.String())
	}
}

// collect adds fusebox_slo_no_samples_total per SLO seen.
func (w *noSamplesWatch) collect(s *observe.Snapshot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for slo, n := range w.counts {
		s.Extra = append(s.Extra, observe.Sample{Name: "fusebox_slo_no_samples_total",
			Help: "no_samples verdicts per SLO: evaluations of a key whose calls matched the SLO but carried no value of its metric (e.g. ttft_ms on spans without time to first token) for the SLO's no_samples_evaluations evaluations in a row (tail, drift, decay).",
			Kind: observe.CounterSample, Value: float64(n), Labels: []observe.Label{{Name: "slo", Value: slo}}})
	}
}
