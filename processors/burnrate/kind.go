package burnrate

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Name is the kind's name: the SLO file's section key (`burnrate:`) and
// the Processor of every verdict this package emits.
const Name = "burnrate"

// Kind is the burnrate kind, for processors/registry: its defaults are a
// valid sample.
func Kind() processors.Kind { return processors.NewKind(Name, DefaultConfig, DefaultConfig, New) }

// Interval is Every: the buckets' width and how often the rules are
// judged.
func (c *Config) Interval() time.Duration { return c.Every }

// Metrics depend on the rules: MetricPage when page rules are set,
// MetricTicket when ticket rules are.
func (c *Config) Metrics() []string {
	var m []string
	if len(c.Page) > 0 {
		m = append(m, MetricPage)
	}
	if len(c.Ticket) > 0 {
		m = append(m, MetricTicket)
	}
	return m
}

// Summary names the target, every rule and the interval, and the bad
// events when not the default.
func (c *Config) Summary() string {
	bad := ""
	if !c.defaultBadEvents() {
		bad = "; bad events " + strings.Join(c.BadEvents, ", ")
	}
	return fmt.Sprintf("burnrate: target %g; page %s; ticket %s; every %v%s", c.Target, rulesText(c.Page), rulesText(c.Ticket), c.Every, bad)
}

func rulesText(rs []Rule) string {
	if len(rs) == 0 {
		return "none"
	}
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%g× over %v and %v", r.Factor, r.Long, r.Short))
	}
	return strings.Join(out, ", ")
}

// StateShape: the latency threshold and the bad events (when not the
// default) that make an event bad, the interval
// and every rule's two windows shape the buckets, and the method (CUSUM
// keeps a statistic) when not the default; the target, the factors and
// the minimum counts only judge them.
func (c *Config) StateShape() any {
	var windows []any
	for _, r := range slices.Concat(c.Page, c.Ticket) {
		windows = append(windows, r.Long, r.Short)
	}
	shape := []any{c.LatencyThresholdMs, c.Every, windows}
	if c.Method != MethodMultiwindow {
		// The CUSUM statistic is state too; the default shape (and so
		// every existing StateID) is unchanged.
		shape = append(shape, c.Method)
	}
	if !c.defaultBadEvents() {
		// What makes a call bad is in the buckets (and failed_answers
		// adds the errors / failed answers counts); default unchanged.
		// Sorted: the order they are written in changes no bucket.
		shape = append(shape, c.canonicalBadEvents())
	}
	return shape
}
