package openslo

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/burnrate"
	"github.com/fusebox-dev/fusebox/processors/corrections"
	"github.com/fusebox-dev/fusebox/processors/decay"
	"github.com/fusebox-dev/fusebox/processors/drift"
	"github.com/fusebox-dev/fusebox/processors/scaling"
	"github.com/fusebox-dev/fusebox/processors/tail"
	"github.com/fusebox-dev/fusebox/schemas"
	"go.yaml.in/yaml/v3"
)

// budgetPeriod is the timeWindow export gives a burn-rate SLO: fusebox has
// no budget period of its own (its rules state their factors and
// windows), and its default rules are the SRE workbook's for 30 days.
const budgetPeriod = "30d"

// noService is spec.service when the SLO does not select exactly one
// service; the annotation fusebox.dev/match says which keys it selects.
const noService = "fusebox"

// Export writes the SLOs of f (a loaded SLO file) as OpenSLO v1 documents,
// one YAML stream: per SLO an SLO and its SLI, and for burn-rate SLOs an
// AlertPolicy and an AlertCondition per page and ticket rule, then one
// AlertNotificationTarget (fusebox) when there are any. The rest of the
// SLO file (Kafka, the breaker, sinks) has no OpenSLO counterpart and is
// not written. metadata.name is an RFC 1123 label, as OpenSLO requires:
// a fusebox name that is not one is slugged (lowercase, other characters
// '-', cut to 63 with a hash suffix when longer or when two would clash),
// an SLO keeping its fusebox name as the annotation fusebox.dev/name. It
// fails only when an SLO has not exactly one processor section (Load
// refuses those), or when two names would clash even so.
func Export(f *config.File) ([]byte, error) {
	var docs []document
	alerts := false
	for i := range f.SLOs {
		d, err := exportSLO(&f.SLOs[i])
		if err != nil {
			return nil, err
		}
		docs = append(docs, d...)
		if len(d) > 2 {
			alerts = true
		}
	}
	if alerts {
		docs = append(docs, document{APIVersion: APIVersion, Kind: "AlertNotificationTarget", Metadata: metadata{Name: targetName},
			Spec: notificationTargetSpec{Description: "fusebox itself: breach verdicts on its verdict topic, which its breaker turns into fuse commands", Target: SourceType}})
	}
	if err := renameDocs(docs); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// exportSLO writes one fusebox SLO: its SLO and SLI documents, then its
// alert policies and conditions.
func exportSLO(s *config.SLO) ([]document, error) {
	sec, ok := s.Processor()
	if !ok {
		return nil, fmt.Errorf("openslo: slo %q has %d processor sections, want one", s.Name, len(s.Sections))
	}
	ann := map[string]string{Prefix + annKind: sec.Kind.Name, Prefix + annMatch: matchValue(s.Match)}
	spec := sloSpec{Description: sec.Config.Summary(), Service: noService, IndicatorRef: s.Name, BudgetingMethod: "Occurrences"}
	if len(s.Match.Service) == 1 {
		spec.Service = s.Match.Service[0]
	}
	var sli sliSpec
	var skip []string
	window := func(d time.Duration) {
		if sh, ok := shorthand(d); ok {
			spec.TimeWindow = []timeWindow{{Duration: sh, IsRolling: true}}
			skip = append(skip, "window")
		}
	}
	threshold := func(src map[string]any) {
		sli.ThresholdMetric = &metricHolder{MetricSource: metricSource{Type: SourceType, Spec: src}}
	}
	ratio := func(bad, total map[string]any) {
		sli.RatioMetric = &ratioMetric{Bad: &metricHolder{MetricSource: metricSource{Type: SourceType, Spec: bad}},
			Total: metricHolder{MetricSource: metricSource{Type: SourceType, Spec: total}}}
	}
	var extra []document
	switch c := sec.Config.(type) {
	case *tail.Config:
		threshold(map[string]any{"metric": string(c.Metric)})
		spec.Objectives = []objective{{Op: "lte", Value: ptr(c.Budget), Target: c.P}}
		skip = append(skip, "metric", "p", "budget")
		window(c.Window)
	case *drift.Config:
		threshold(map[string]any{"metric": string(c.Metric), "statistic": statKS})
		spec.Objectives = []objective{{Op: "lt", Value: ptr(c.EffectiveMinEffect()), Target: 1 - c.KSAlpha()}}
		skip = append(skip, "metric", "min_effect")
		window(c.Window)
	case *decay.Config:
		threshold(map[string]any{"metric": string(c.Metric), "statistic": statDecline})
		spec.Objectives = []objective{{Op: "gte", Value: ptr(c.Limit), Target: 1 - c.Alpha}}
		skip = append(skip, "metric", "limit")
		window(c.Window)
	case *scaling.Config:
		threshold(map[string]any{"metric": string(processors.MetricDuration), "statistic": statStdDev})
		// Scaling gives hints, not an error budget: target 0.
		spec.Objectives = []objective{{Op: "lte", Value: ptr(c.StdDevBudgetMs), Target: 0}}
		skip = append(skip, "stddev_budget_ms")
		window(c.Window)
	case *corrections.Config:
		ratio(map[string]any{"count": countCorrections}, map[string]any{"count": countResponses})
		spec.Objectives = []objective{{Target: 1 - c.MaxRate}}
		window(c.Window)
	case *burnrate.Config:
		bad := map[string]any{"count": countErrors}
		if c.LatencyThresholdMs > 0 {
			bad["latency_threshold_ms"] = c.LatencyThresholdMs
		}
		ratio(bad, map[string]any{"count": countCalls})
		spec.Objectives = []objective{{Target: c.Target}}
		spec.TimeWindow = []timeWindow{{Duration: budgetPeriod, IsRolling: true}}
		skip = append(skip, "target", "latency_threshold_ms", "page", "ticket")
		for _, set := range []struct {
			severity string
			rules    []burnrate.Rule
		}{{severityPage, c.Page}, {severityTicket, c.Ticket}} {
			for i, r := range set.rules {
				name := s.Name + "-" + set.severity + "-" + strconv.Itoa(i+1)
				spec.AlertPolicies = append(spec.AlertPolicies, policyRef{AlertPolicyRef: name})
				extra = append(extra, exportRule(name, set.severity, r)...)
			}
		}
	default:
		// A kind OpenSLO has no counterpart for: the annotations carry
		// its whole section; the SLI names the kind.
		threshold(map[string]any{"kind": sec.Kind.Name})
		spec.Objectives = []objective{{Target: 0}} // a placeholder: OpenSLO requires an objective
	}
	fields, err := changedFields(sec.Kind, sec.Config, skip...)
	if err != nil {
		return nil, fmt.Errorf("openslo: slo %q: %w", s.Name, err)
	}
	for k, v := range fields {
		ann[k] = v
	}
	docs := []document{
		{APIVersion: APIVersion, Kind: "SLO", Metadata: metadata{Name: s.Name, Annotations: ann}, Spec: spec},
		{APIVersion: APIVersion, Kind: "SLI", Metadata: metadata{Name: s.Name}, Spec: sli},
	}
	return append(docs, extra...), nil
}

// exportRule writes one burn-rate rule as an AlertPolicy and its
// AlertCondition, both called name. OpenSLO's condition has one
// lookbackWindow: the rule's long window; the short window is the
// condition's annotation fusebox.dev/short_window (a long window that is
// not a whole number of minutes goes to fusebox.dev/long_window, the
// lookbackWindow then rounded up).
func exportRule(name, severity string, r burnrate.Rule) []document {
	ann := map[string]string{Prefix + annShort: r.Short.String()}
	long, ok := shorthand(r.Long)
	if !ok {
		long, _ = shorthand(r.Long.Truncate(time.Minute) + time.Minute)
		ann[Prefix+annLong] = r.Long.String()
	}
	return []document{
		{APIVersion: APIVersion, Kind: "AlertPolicy", Metadata: metadata{Name: name}, Spec: alertPolicySpec{
			AlertWhenBreaching: true, Conditions: []conditionRef{{ConditionRef: name}}, NotificationTargets: []targetRef{{TargetRef: targetName}}}},
		{APIVersion: APIVersion, Kind: "AlertCondition", Metadata: metadata{Name: name, Annotations: ann}, Spec: alertConditionSpec{
			Severity:  severity,
			Condition: burnRateCondition{Kind: "burnrate", Op: opBurn, Threshold: r.Factor, LookbackWindow: long, AlertAfter: "0m"}}},
	}
}

// matchValue writes m as flow YAML with its empty lists left out: {} for
// every key.
func matchValue(m schemas.Match) string {
	var parts []string
	for _, f := range []struct {
		k string
		v []string
	}{{"tenant", m.Tenant}, {"service", m.Service}, {"model", m.Model}, {"variant", m.Variant}, {"operation", m.Operation}} {
		if f.v == nil {
			continue
		}
		n := &yaml.Node{}
		_ = n.Encode(f.v) // a []string always encodes
		flow(n)
		b, _ := yaml.Marshal(n)
		parts = append(parts, f.k+": "+strings.TrimSpace(string(b)))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func ptr(v float64) *float64 { return &v }

// The metricSource specs of fusebox's SLIs (type fusebox).
const (
	countErrors      = "errors"      // failed calls (span status ERROR or error.type), or slower than latency_threshold_ms
	countCalls       = "calls"       // every call
	countGood        = "good_calls"  // calls that did not fail (import only: a good/total ratio)
	countCorrections = "corrections" // responses users corrected
	countResponses   = "responses"   // responses (calls of the SLO's keys)
	statKS           = "ks_distance" // drift: Kolmogorov–Smirnov distance to the reference
	statDecline      = "decline"     // decay: slope × window of the score
	statStdDev       = "stddev"      // scaling: latency standard deviation per window
	severityPage     = "page"
	severityTicket   = "ticket"
	annLong          = "long_window"
	// opBurn is the op of a burnrate AlertCondition: fusebox breaches
	// when the burn rate is greater than the factor.
	opBurn = "gt"
)
