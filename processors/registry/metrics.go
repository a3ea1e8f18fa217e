package registry

import (
	"reflect"

	"github.com/fusebox-dev/fusebox/processors/burnrate"
	"github.com/fusebox-dev/fusebox/processors/corrections"
	"github.com/fusebox-dev/fusebox/processors/decay"
	"github.com/fusebox-dev/fusebox/processors/drift"
	"github.com/fusebox-dev/fusebox/processors/scaling"
	"github.com/fusebox-dev/fusebox/processors/tail"
)

// The verdict metrics of each kind, from the names the processors
// themselves use in their verdicts.

func tailMetrics(c *tail.Config) []string { return []string{tail.MetricName(c.P, c.Metric)} }

func driftMetrics(c *drift.Config) []string { return []string{drift.MetricName(*c)} }

func decayMetrics(c *decay.Config) []string { return []string{decay.MetricName(*c)} }

func scalingMetrics(*scaling.Config) []string { return []string{scaling.MetricScaling} }

// correctionsMetrics: the rate of every key, the canary comparison where a
// canary and its baseline have traffic, the unjoined count where
// corrections found no span.
func correctionsMetrics(*corrections.Config) []string {
	return []string{corrections.MetricRate, corrections.MetricCanary, corrections.MetricUnjoined}
}

// burnrateMetrics: a page verdict when page rules are set, a ticket
// verdict when ticket rules are.
func burnrateMetrics(c *burnrate.Config) []string {
	var m []string
	if len(c.Page) > 0 {
		m = append(m, burnrate.MetricPage)
	}
	if len(c.Ticket) > 0 {
		m = append(m, burnrate.MetricTicket)
	}
	return m
}

func sameType(a, b Config) bool { return reflect.TypeOf(a) == reflect.TypeOf(b) }
