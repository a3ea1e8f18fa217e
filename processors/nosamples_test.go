package processors

import "testing"

// TestMetricOf: the WARN of a no_samples verdict names the span metric
// behind each kind's verdict metric.
func TestMetricOf(t *testing.T) {
	for in, want := range map[string]Metric{
		"p999_ttft_ms": MetricTTFT, "p99_duration_ms": MetricDuration, "ks_confidence": MetricConfidence,
		"canary_ks_output_tokens": MetricOutputTokens, "decline_alignment": MetricAlignment, "tpot_ms": MetricTPOT,
	} {
		if got, ok := MetricOf(in); !ok || got != want {
			t.Errorf("MetricOf(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if m, ok := MetricOf("burn_rate"); ok {
		t.Errorf("MetricOf(burn_rate) = %q", m)
	}
}
