package replay

import (
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/schemas"
)

// ProcessorFor names the processor that should catch an incident kind.
func ProcessorFor(k traffic.Kind) string {
	switch k {
	case traffic.TailBlowup:
		return "tail"
	case traffic.CanaryDrift:
		return "drift"
	case traffic.AlignmentDecay:
		return "decay"
	case traffic.CorrectionSpike:
		return "corrections"
	case traffic.MixShift:
		return "scaling"
	case traffic.ErrorBurst:
		return "burnrate"
	}
	return ""
}

// Hits reports whether an incident's target covers key. A dimension the
// key aggregates (schemas.Wildcard, as in scaling's scope keys) is covered
// when the target leaves it open too; an empty target field matches every
// value.
func Hits(t traffic.Target, key schemas.Key) bool {
	dim := func(want, got string) bool {
		if got == schemas.Wildcard {
			return want == ""
		}
		return want == "" || want == got
	}
	return dim(t.Tenant, key.Tenant) && dim(t.Service, key.Service) && dim(t.Model, key.Model) && dim(t.Variant, key.Variant)
}

// Detection is how fast a processor caught one incident.
type Detection struct {
	Incident  traffic.Incident
	Processor string
	// Start is the incident's start (Unix ns); Deadline is the window end
	// of the second evaluation whose window ends after Start (Start + 2
	// intervals when Start is a boundary).
	Start, Deadline int64
	// Found reports whether any non-ok verdict (warn or breach) of the
	// processor on a key the incident hits has a window ending after
	// Start; At, Key, Status and Metric describe the first one.
	Found  bool
	At     int64
	Key    schemas.Key
	Status schemas.Status
	Metric string
	// BreachFound reports whether a breach (what the breaker acts on)
	// followed; BreachAt is the window end of the first one.
	BreachFound bool
	BreachAt    int64
	// EarlyBreaches counts breaches of the processor on the incident's
	// keys with windows ending at or before Start: an alarm that was on
	// before the incident is no detection of it.
	EarlyBreaches int
}

// InTime reports whether the incident was found by its deadline.
func (d Detection) InTime() bool { return d.Found && d.At <= d.Deadline }

// Detect finds the first alarm of processor on the incident's keys, in
// verdicts of traffic that started at start; every is the processor's
// evaluation interval. Only verdicts whose metric is in metrics count
// when metrics is not empty.
func Detect(vs []schemas.Verdict, start time.Time, inc traffic.Incident, processor string, every time.Duration, metrics ...string) Detection {
	s := start.Add(inc.Start).UnixNano()
	e := int64(every)
	first := (s + e - 1) / e * e // first boundary at or after s
	if first == s {
		first += e // the evaluation at s holds nothing of the incident
	}
	d := Detection{Incident: inc, Processor: processor, Start: s, Deadline: first + e}
	for i := range vs {
		v := &vs[i]
		if v.Processor != processor || !Hits(inc.Target, v.Key) || !metricIn(v.Metric, metrics) {
			continue
		}
		if v.WindowEndUnixNano <= s {
			if v.Status == schemas.StatusBreach {
				d.EarlyBreaches++
			}
			continue
		}
		if v.Status != schemas.StatusWarn && v.Status != schemas.StatusBreach {
			continue
		}
		if v.Status == schemas.StatusBreach && (!d.BreachFound || v.WindowEndUnixNano < d.BreachAt) {
			d.BreachFound, d.BreachAt = true, v.WindowEndUnixNano
		}
		if !d.Found || v.WindowEndUnixNano < d.At {
			d.Found, d.At, d.Key, d.Status, d.Metric = true, v.WindowEndUnixNano, v.Key, v.Status, v.Metric
		}
	}
	return d
}

func metricIn(m string, ms []string) bool {
	if len(ms) == 0 {
		return true
	}
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// SLOFor returns the first SLO of f that runs processor, and its
// evaluation interval.
func SLOFor(f *config.File, processor string) (name string, every time.Duration, ok bool) {
	for _, s := range f.SLOs {
		if sec, ok := s.Processor(); ok && sec.Kind.Name == processor {
			return s.Name, sec.Config.Interval(), true
		}
	}
	return "", 0, false
}
