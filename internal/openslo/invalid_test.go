package openslo

import (
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/internal/config"
)

// sloDoc is a valid v1 burn-rate SLO with its SLI inlined; the invalid
// cases edit it.
const sloDoc = `apiVersion: openslo/v1
kind: SLO
metadata:
  name: api
spec:
  service: api
  indicator:
    metadata:
      name: api-errors
    spec:
      ratioMetric:
        bad:
          metricSource:
            type: fusebox
            spec:
              count: errors
        total:
          metricSource:
            type: fusebox
            spec:
              count: calls
  timeWindow:
    - duration: 30d
      isRolling: true
  budgetingMethod: Occurrences
  objectives:
    - target: 0.999
`

// latencyDoc is a valid v1 tail SLO.
const latencyDoc = `apiVersion: openslo/v1
kind: SLO
metadata:
  name: lat
spec:
  service: api
  indicator:
    metadata:
      name: lat
    spec:
      thresholdMetric:
        metricSource:
          type: fusebox
          spec:
            metric: duration_ms
  budgetingMethod: Occurrences
  objectives:
    - op: lte
      value: 2000
      target: 0.999
`

// policyDocs adds a page policy with its condition to sloDoc.
const policyDocs = `  alertPolicies:
    - alertPolicyRef: api-page
---
apiVersion: openslo/v1
kind: AlertPolicy
metadata:
  name: api-page
spec:
  alertWhenBreaching: true
  conditions:
    - conditionRef: api-page
  notificationTargets: []
---
apiVersion: openslo/v1
kind: AlertCondition
metadata:
  name: api-page
spec:
  severity: page
  condition:
    kind: burnrate
    op: gt
    threshold: 14.4
    lookbackWindow: 1h
    alertAfter: 0m
`

// TestImportInvalid: invalid OpenSLO, or OpenSLO fusebox cannot map, is
// refused with its file, line, document and field, and a reason.
func TestImportInvalid(t *testing.T) {
	valid := sloDoc + policyDocs
	if res, _ := (Importer{}).Import([]Input{{Name: "ok.yaml", Data: []byte(valid)}}); len(res.Problems) > 0 || res.SLOs != 1 {
		t.Fatalf("the base case: %d SLOs, %s", res.SLOs, res.Problems.Error())
	}
	for _, c := range []struct {
		name, base, from, to, want string
	}{
		{"not yaml", sloDoc, "kind: SLO", "kind: [SLO", "f.yaml:1: document 1: (document): not YAML: yaml: line 1:"},
		{"api version", sloDoc, "openslo/v1\n", "openslo/v2alpha\n", `f.yaml:1: document 1 (SLO api): apiVersion: want openslo/v1 (or openslo/v1alpha), got "openslo/v2alpha"`},
		{"unknown kind", sloDoc, "kind: SLO", "kind: Objective", `f.yaml:2: document 1 (Objective api): kind: want one of SLO, SLI`},
		{"no name", sloDoc, "  name: api\n", "", "f.yaml:3: document 1 (SLO): metadata.name: required"},
		{"unknown field", sloDoc, "  service: api\n", "  service: api\n  owner: me\n", "f.yaml:7: document 1 (SLO api): spec.owner: not mapped: fusebox has no counterpart for this field"},
		{"timeslices", sloDoc, "budgetingMethod: Occurrences", "budgetingMethod: Timeslices", "f.yaml:25: document 1 (SLO api): spec.budgetingMethod: Timeslices is not mapped"},
		{"no budgeting method", sloDoc, "  budgetingMethod: Occurrences\n", "", "document 1 (SLO api): spec.budgetingMethod: required (Occurrences)"},
		{"calendar", sloDoc, "      isRolling: true\n", "      calendar: {startTime: 2020-01-21 12:30:00, timeZone: UTC}\n", "f.yaml:24: document 1 (SLO api): spec.timeWindow[0].calendar: calendar-aligned windows are not mapped"},
		{"calendar unit", sloDoc, "duration: 30d", "duration: 1M", `f.yaml:23: document 1 (SLO api): spec.timeWindow[0].duration: "1M": calendar units (M, Q, Y) are not mapped`},
		{"two objectives", sloDoc, "    - target: 0.999\n", "    - target: 0.999\n    - target: 0.99\n", "f.yaml:28: document 1 (SLO api): spec.objectives[1]: fusebox runs one objective per SLO"},
		{"target percent", sloDoc, "target: 0.999", "targetPercent: 120", "f.yaml:27: document 1 (SLO api): spec.objectives[0].targetPercent: must be in [0, 1) (targetPercent in [0, 100)), got 1.2"},
		{"target and percent", sloDoc, "target: 0.999", "target: 0.999\n      targetPercent: 99.9", "f.yaml:28: document 1 (SLO api): spec.objectives[0].targetPercent: give target or targetPercent, not both"},
		{"no target", sloDoc, "    - target: 0.999\n", "    - displayName: x\n", "document 1 (SLO api): spec.objectives[0].target: required: target (or targetPercent)"},
		{"target a string", sloDoc, "target: 0.999", "target: high", `f.yaml:27: document 1 (SLO api): spec.objectives[0].target: want a number, got "high"`},
		{"no indicator", sloDoc, "  indicator:\n", "  indicatorx:\n", "document 1 (SLO api): spec.indicator: an SLO needs indicator or indicatorRef"},
		{"missing SLI", sloDoc, "  indicator:\n", "  indicatorRef: nope\n  indicatorx:\n", `f.yaml:7: document 1 (SLO api): spec.indicatorRef: no SLI named "nope" in the files`},
		{"raw ratio", sloDoc, "        bad:\n", "        rawType: failure\n        raw: {metricSource: {type: fusebox, spec: {count: errors}}}\n        bad:\n", "f.yaml:13: document 1 (SLO api): spec.indicator.spec.ratioMetric.raw: a precomputed ratio is not mapped"},
		{"good and bad", sloDoc, "        bad:\n", "        good: {metricSource: {type: fusebox, spec: {count: good_calls}}}\n        bad:\n", "f.yaml:12: document 1 (SLO api): spec.indicator.spec.ratioMetric: give good or bad (with total)"},
		{"unknown count", sloDoc, "count: errors", "count: timeouts", `f.yaml:12: document 1 (SLO api): spec.indicator.spec.ratioMetric: fusebox counts bad errors or good good_calls over total calls, or bad corrections over total responses; got good "", bad "timeouts", total "calls"`},
		{"unknown source field", sloDoc, "count: errors", "count: errors\n              region: eu", "f.yaml:17: document 1 (SLO api): spec.indicator.spec.ratioMetric.bad.metricSource.spec.region: not mapped: fusebox has no counterpart for this field"},
		{"prometheus query", sloDoc, "            type: fusebox\n            spec:\n              count: errors", "            type: Prometheus\n            spec:\n              query: sum(rate(errors[5m]))", "f.yaml:14: document 1 (SLO api): spec.indicator.spec.ratioMetric.bad.metricSource: a Prometheus query is not mapped"},
		{"unknown annotation", sloDoc, "  name: api\n", "  name: api\n  annotations:\n    fusebox.dev/min_event: \"50\"\n", `f.yaml:6: document 1 (SLO api): metadata.annotations["fusebox.dev/min_event"]: not a field of this kind`},
		{"annotation of the wrong type", sloDoc, "  name: api\n", "  name: api\n  annotations:\n    fusebox.dev/min_events: many\n", `f.yaml:6: document 1 (SLO api): metadata.annotations["fusebox.dev/min_events"]: wrong value "many"`},
		{"annotation of a mapped field", sloDoc, "  name: api\n", "  name: api\n  annotations:\n    fusebox.dev/target: \"0.9\"\n", `f.yaml:6: document 1 (SLO api): metadata.annotations["fusebox.dev/target"]: this field is mapped to an OpenSLO field: edit that one`},
		{"kind disagrees", sloDoc, "  name: api\n", "  name: api\n  annotations:\n    fusebox.dev/kind: tail\n", `f.yaml:6: document 1 (SLO api): metadata.annotations["fusebox.dev/kind"]: says tail, but the SLI is one of burnrate`},
		{"unknown fusebox kind", sloDoc, "  name: api\n", "  name: api\n  annotations:\n    fusebox.dev/kind: counter\n", `metadata.annotations["fusebox.dev/kind"]: says counter, but the SLI is one of burnrate`},
		{"service disagrees", sloDoc, "  name: api\n", "  name: api\n  annotations:\n    fusebox.dev/match: \"{service: [web]}\"\n", `f.yaml:8: document 1 (SLO api): spec.service: "api", but annotation fusebox.dev/match selects service "web": edit one of them`},
		{"fusebox annotation on an SLI", sloDoc, "      name: api-errors\n", "      name: api-errors\n      annotations:\n        fusebox.dev/alpha: \"0.1\"\n", `f.yaml:11: document 1 (SLO api): spec.indicator.metadata.annotations["fusebox.dev/alpha"]: not mapped`},
		{"fusebox check", sloDoc, "target: 0.999", "target: 0", "document 1 (SLO api): (fusebox burnrate) target: must be in (0, 1)"},
		{"latency op", latencyDoc, "op: lte", "op: gte", `f.yaml:18: document 1 (SLO lat): spec.objectives[0].op: want lte for a tail SLO, got "gte"`},
		{"latency no value", latencyDoc, "      value: 2000\n", "", "document 1 (SLO lat): spec.objectives[0].value: required"},
		{"latency metric", latencyDoc, "metric: duration_ms", "metric: tokens_per_second", "document 1 (SLO lat): (fusebox tail) metric: must be duration_ms, ttft_ms or tpot_ms"},
		{"unknown statistic", latencyDoc, "metric: duration_ms", "metric: duration_ms\n            statistic: p50", `f.yaml:11: document 1 (SLO lat): spec.indicator.spec: unknown statistic "p50"`},
		{"latency with alert policies", latencyDoc, "      target: 0.999\n", "      target: 0.999\n  alertPolicies: []\n", "document 1 (SLO lat): spec.alertPolicies: only burn-rate SLOs have alert policies"},
		{"severity", valid, "severity: page", "severity: sev1", `f.yaml:46: document 3 (AlertCondition api-page): spec.severity: want page or ticket (fusebox's two burn-rate verdicts), got "sev1"`},
		{"alert after", valid, "alertAfter: 0m", "alertAfter: 5m", "f.yaml:52: document 3 (AlertCondition api-page): spec.condition.alertAfter: a hold-down is not mapped"},
		{"condition kind", valid, "kind: burnrate", "kind: threshold", `f.yaml:48: document 3 (AlertCondition api-page): spec.condition.kind: want burnrate, got "threshold"`},
		{"condition op lte", valid, "op: gt", "op: lte", "f.yaml:49: document 3 (AlertCondition api-page): spec.condition.op: lte is not mapped: fusebox breaches when the burn rate exceeds the threshold (op gt)"},
		{"condition op lt", valid, "op: gt", "op: lt", "f.yaml:49: document 3 (AlertCondition api-page): spec.condition.op: lt is not mapped"},
		{"condition op unknown", valid, "op: gt", "op: above", `f.yaml:49: document 3 (AlertCondition api-page): spec.condition.op: want gt (or gte; OpenSLO's ops are lte, gte, lt, gt), got "above"`},
		{"no threshold", valid, "    threshold: 14.4\n", "", "document 3 (AlertCondition api-page): spec.condition.threshold: required: the burn rate factor"},
		{"no lookback", valid, "    lookbackWindow: 1h\n", "", "document 3 (AlertCondition api-page): spec.condition.lookbackWindow: required: the long window"},
		{"bad short window", valid, "  name: api-page\nspec:\n  severity", "  name: api-page\n  annotations:\n    fusebox.dev/short_window: soon\nspec:\n  severity", `f.yaml:46: document 3 (AlertCondition api-page): metadata.annotations["fusebox.dev/short_window"]: want a positive duration such as 5m, got "soon"`},
		{"long window edited", valid, "  name: api-page\nspec:\n  severity", "  name: api-page\n  annotations:\n    fusebox.dev/long_window: 1h30s\nspec:\n  severity", `f.yaml:46: document 3 (AlertCondition api-page): metadata.annotations["fusebox.dev/long_window"]: 1h30s goes with lookbackWindow 61m, but lookbackWindow is 1h: edit one of them, or drop the annotation`},
		{"bad long window", valid, "  name: api-page\nspec:\n  severity", "  name: api-page\n  annotations:\n    fusebox.dev/long_window: later\nspec:\n  severity", `f.yaml:46: document 3 (AlertCondition api-page): metadata.annotations["fusebox.dev/long_window"]: want a positive duration such as 90s, got "later"`},
		{"not breaching", valid, "alertWhenBreaching: true", "alertWhenBreaching: false", "f.yaml:36: document 2 (AlertPolicy api-page): spec.alertWhenBreaching: fusebox breaches whenever the condition holds"},
		{"two conditions", valid, "    - conditionRef: api-page\n", "    - conditionRef: api-page\n    - conditionRef: api-page\n", "f.yaml:37: document 2 (AlertPolicy api-page): spec.conditions: want exactly one condition (OpenSLO allows one), got 2"},
		{"missing policy", valid, "alertPolicyRef: api-page", "alertPolicyRef: api-paging", `f.yaml:29: document 1 (SLO api): spec.alertPolicies[0].alertPolicyRef: no AlertPolicy named "api-paging" in the files`},
		{"missing condition", valid, "conditionRef: api-page", "conditionRef: api-paging", `f.yaml:38: document 2 (AlertPolicy api-page): spec.conditions[0].conditionRef: no AlertCondition named "api-paging" in the files`},
		{"unreferenced SLI", valid, "---\napiVersion: openslo/v1\nkind: AlertPolicy", "---\napiVersion: openslo/v1\nkind: SLI\nmetadata: {name: spare}\nspec: {}\n---\napiVersion: openslo/v1\nkind: AlertPolicy", "f.yaml:32: document 2 (SLI spare): kind: no SLO of the files refers to this SLI: not imported"},
		{"duplicate SLO", sloDoc, "", "", ""}, // filled below
	} {
		t.Run(c.name, func(t *testing.T) {
			data := strings.Replace(c.base, c.from, c.to, 1)
			want := c.want
			if c.name == "duplicate SLO" {
				data = sloDoc + "---\n" + sloDoc
				want = `f.yaml:31: document 2 (SLO api): metadata.name: a second SLO named "api" (the first: f.yaml document 1)`
			} else if data == c.base {
				t.Fatalf("the edit %q does not apply", c.from)
			}
			res, err := Importer{}.Import([]Input{{Name: "f.yaml", Data: []byte(data)}})
			if err != nil {
				t.Fatal(err)
			}
			refused := res.Problems.Refused()
			if !strings.Contains(refused.Error(), want) {
				t.Errorf("problems:\n%s\nwant one with %q", res.Problems.Error(), want)
			}
		})
	}
}

// TestImportConditionOp: a burnrate condition's op gt imports without a
// problem; gte, and no op (the OpenSLO README before op was required),
// import as gt with a note; lt and lte are refused (TestImportInvalid)
// and the rule is left out.
func TestImportConditionOp(t *testing.T) {
	valid := sloDoc + policyDocs
	for _, c := range []struct {
		name, to, note string
	}{
		{"gt", "op: gt", ""},
		{"gte", "op: gte", "f.yaml:49: document 3 (AlertCondition api-page): spec.condition.op: note: read as gt: fusebox compares strictly"},
		{"absent", "", "f.yaml:48: document 3 (AlertCondition api-page): spec.condition.op: note: missing (OpenSLO v1 requires it for kind burnrate): read as gt"},
		{"lte", "op: lte", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := strings.Replace(valid, "    op: gt\n", "    "+c.to+"\n", 1)
			if c.to == "" {
				data = strings.Replace(valid, "    op: gt\n", "", 1)
			}
			res, err := Importer{}.Import([]Input{{Name: "f.yaml", Data: []byte(data)}})
			if err != nil {
				t.Fatal(err)
			}
			if c.name == "lte" {
				if len(res.Problems.Refused()) == 0 || strings.Contains(string(res.File), "factor: 14.4") {
					t.Errorf("lte: want refused and the rule left out:\n%s\n%s", res.Problems.Error(), res.File)
				}
				return
			}
			if len(res.Problems.Refused()) > 0 {
				t.Fatalf("refused:\n%s", res.Problems.Error())
			}
			if got := res.Problems.Error(); (c.note == "") != (got == "") || !strings.Contains(got, c.note) {
				t.Errorf("problems:\n%s\nwant %q", got, c.note)
			}
			if !strings.Contains(string(res.File), "factor: 14.4") {
				t.Errorf("the rule is not imported:\n%s", res.File)
			}
		})
	}
}

// TestExportConditionOp: export writes op gt on every burnrate condition,
// as OpenSLO v1 requires.
func TestExportConditionOp(t *testing.T) {
	f, err := config.Parse("f.yaml", []byte("slos:\n  - name: api\n    burnrate: {target: 0.999}\n"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Export(f)
	if err != nil {
		t.Fatal(err)
	}
	if n, m := strings.Count(string(out), "kind: AlertCondition\n"), strings.Count(string(out), "    kind: burnrate\n    op: gt\n"); n != 4 || m != 4 {
		t.Errorf("%d conditions, %d with op gt; want 4 and 4:\n%s", n, m, out)
	}
}
