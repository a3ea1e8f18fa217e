package config

import (
	"strings"
	"testing"
)

const rulesSLOs = `slos:
  - name: chat-latency
    tail: {budget: 2500, window: 5m}
  - name: canary-confidence
    drift: {metric: confidence, mode: canary, window: 5m}
breaker:
  rules:
`

// TestRulesThatCannotFire: a rule naming a processor, SLO or metric that
// does not exist, or a processor no SLO runs, is an error with file:line
// and a did-you-mean (issue 12: `{processor: drfit}` and `decay →
// rollback` without a decay SLO used to pass with ok and never fire).
func TestRulesThatCannotFire(t *testing.T) {
	for _, tc := range []struct{ name, rule, want string }{
		{"misspelt processor", "    - {processor: drfit, action: rollback}\n",
			`x.yaml:8: breaker.rules[0].processor: unknown processor "drfit" (did you mean drift?); the processors are tail, drift, decay, scaling, corrections or burnrate`},
		{"no SLO of the kind", "    - {processor: decay, action: rollback}\n",
			"x.yaml:8: breaker.rules[0].processor: no SLO runs processor decay: the rule can never fire; the SLOs run tail (chat-latency), drift (canary-confidence)"},
		{"misspelt SLO", "    - {processor: tail, slo: chat-latncy, action: trip}\n",
			`x.yaml:8: breaker.rules[0].slo: no SLO named "chat-latncy" (did you mean chat-latency?); the tail SLOs are chat-latency`},
		{"SLO of another kind", "    - {processor: tail, slo: canary-confidence, action: trip}\n",
			`x.yaml:8: breaker.rules[0].slo: SLO "canary-confidence" runs drift, not tail`},
		{"misspelt metric", "    - {processor: tail, metric: p999_duration_m, action: trip}\n",
			`x.yaml:8: breaker.rules[0].metric: no chat-latency verdict has metric "p999_duration_m" (did you mean p999_duration_ms?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(rulesSLOs+tc.rule))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
	// Rules that can fire pass.
	ok := rulesSLOs + "    - {processor: tail, slo: chat-latency, metric: p999_duration_ms, action: trip}\n" +
		"    - {processor: drift, action: rollback}\n"
	if _, err := Parse("x.yaml", []byte(ok)); err != nil {
		t.Fatalf("valid rules: %v", err)
	}
	// The default rules (tail, burnrate, scaling) are not an error when
	// the file runs only some of those kinds: no rules were written.
	if _, err := Parse("x.yaml", []byte(minimal)); err != nil {
		t.Fatalf("default rules with only a tail SLO: %v", err)
	}
}
