package processors

import "strings"

// MethodNoSamples labels the insufficient_data verdicts of a key whose
// calls matched the SLO but carried no value of its metric (a ttft_ms SLO
// on spans without time to first token, a decay SLO on spans without an
// alignment score) for the SLO's no_samples_evaluations evaluations in a
// row: the SLO is blind there, and says so, instead of staying silent.
// The tail, drift and decay kinds emit it (processors/internal/nosamples
// counts the calls); its details are DetailNoSamplesCalls,
// DetailNoSamplesRun and DetailNoSamplesEvaluations, and its Evidence
// lists the instrumentation scopes of those calls (Evidence.Scopes).
const MethodNoSamples = "no_samples"

// Detail names of a no_samples verdict, in order.
const (
	DetailNoSamplesCalls       = "calls"                  // calls in the window without the metric
	DetailNoSamplesRun         = "evaluations"            // evaluations in a row with calls and no sample
	DetailNoSamplesEvaluations = "no_samples_evaluations" // the configured number before the verdict
)

// DefaultNoSamplesEvaluations is the default of every kind's
// no_samples_evaluations: how many evaluations in a row a key's window
// must hold calls without the metric and no sample before the
// no_samples verdict.
const DefaultNoSamplesEvaluations = 5

// MetricOf is the span metric a verdict metric is named for: the Metric
// that is the name or its suffix after an underscore ("p999_ttft_ms" →
// ttft_ms, "canary_ks_confidence" → confidence, "decline_alignment" →
// alignment); false when none is (e.g. "burn_rate").
func MetricOf(verdictMetric string) (Metric, bool) {
	for _, m := range Metrics {
		if verdictMetric == string(m) || strings.HasSuffix(verdictMetric, "_"+string(m)) {
			return m, true
		}
	}
	return "", false
}
