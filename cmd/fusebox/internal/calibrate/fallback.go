package calibrate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fusebox-dev/fusebox/schemas"
)

// fallbackModel returns the model with the most calls in perKey (ties:
// the first by name) and the other models, sorted.
func fallbackModel(perKey map[schemas.Key]int) (fallback string, others []string) {
	calls := map[string]int{}
	for k, n := range perKey {
		calls[k.Model] += n
	}
	models := make([]string, 0, len(calls))
	for m := range calls {
		models = append(models, m)
	}
	slices.Sort(models)
	for _, m := range models {
		if fallback == "" || calls[m] > calls[fallback] {
			fallback = m
		}
	}
	for _, m := range models {
		if m != fallback {
			others = append(others, m)
		}
	}
	return fallback, others
}

// actionSLOs writes the SLO name with body for the other models and for
// the fallback model (one SLO for all when there are no others) and
// returns their breaker rules: a degrade to fallback for the others, a
// trip for the fallback's own keys. metric narrows the rules ("" for
// every metric of the processor).
func actionSLOs(y *strings.Builder, name, processor, metric, body, fallback string, others []string) []string {
	narrow := ""
	if metric != "" {
		narrow = ", metric: " + metric
	}
	if len(others) == 0 {
		fmt.Fprintf(y, "  - name: %s\n    %s\n", name, body)
		return []string{fmt.Sprintf("{processor: %s, slo: %s%s, action: trip}", processor, name, narrow)}
	}
	quoted := make([]string, len(others))
	for i, m := range others {
		quoted[i] = yamlStr(m)
	}
	own := sloName(name, fallback)
	fmt.Fprintf(y, "  # %s: degrade to %s, the model with the most calls; its own keys trip (%s)\n", name, fallback, own)
	fmt.Fprintf(y, "  - name: %s\n    match: {model: [%s]}\n    %s\n", name, strings.Join(quoted, ", "), body)
	fmt.Fprintf(y, "  - name: %s\n    match: {model: [%s]}\n    %s\n", own, yamlStr(fallback), body)
	return []string{
		fmt.Sprintf("{processor: %s, slo: %s%s, action: degrade, fallback: %s}", processor, name, narrow, yamlStr(fallback)),
		fmt.Sprintf("{processor: %s, slo: %s%s, action: trip}", processor, own, narrow),
	}
}

// actionNote says in a note what actionSLOs chose.
func actionNote(fallback string, others []string) string {
	if len(others) == 0 {
		return "breaker: trip (one model only: no fallback to degrade to)"
	}
	return fmt.Sprintf("breaker: degrade to %s (the model with the most calls), trip on %s itself", fallback, fallback)
}
