package calibrate

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/fusebox-dev/fusebox/internal/sim/replay"
	"github.com/fusebox-dev/fusebox/processors/effect"
	"github.com/fusebox-dev/fusebox/schemas"
)

// SLOResult is what one SLO did on the replayed traffic.
type SLOResult struct {
	SLO, Processor string
	// ByStatus counts verdicts per status (ok, warn, breach,
	// insufficient_data).
	ByStatus map[schemas.Status]int
	// Trips counts breaker commands opening a target (from closed or
	// half-open) whose reasons are this SLO's verdicts; FirstTrip is the
	// event time of the first (Unix ns), 0 when none.
	Trips     int
	FirstTrip int64
	// FirstBreach is the event time of the first breach verdict, 0 when none.
	FirstBreach int64
	// TripTargets lists the targets tripped, in order, once each.
	TripTargets []schemas.Key
	// Judged holds the keys with a judged verdict (ok, warn or breach):
	// the keys the SLO covered, for key-days.
	Judged map[schemas.Key]bool
}

// Replay is what an SLO file did on the traffic.
type Replay struct {
	Name string
	SLOs []SLOResult
}

// RunFile replays in (sorted) through an engine worker built from the SLO
// file (as `fusebox run` builds it), one batch per second of event time.
func RunFile(name string, file []byte, in *Input) (Replay, error) {
	wc, f, err := replay.ParseWorkerConfig(name, file)
	if err != nil {
		return Replay{}, err
	}
	rep := Replay{Name: name}
	idx := map[string]int{}
	for _, s := range f.SLOs {
		idx[s.Name] = len(rep.SLOs)
		rep.SLOs = append(rep.SLOs, SLOResult{SLO: s.Name, ByStatus: map[schemas.Status]int{}, Judged: map[schemas.Key]bool{}})
	}
	sloOf := map[string]int{}
	open := map[schemas.Key]bool{}
	tripped := map[[2]any]bool{}
	_, err = replay.StreamBatches(wc, batches(in), func(o schemas.Output) {
		for i := range o.Verdicts {
			v := &o.Verdicts[i]
			j, ok := idx[v.SLO]
			if !ok || v.Processor == effect.Name {
				continue // effect verdicts carry their signal's SLO: not that SLO's evaluations
			}
			r := &rep.SLOs[j]
			r.Processor = v.Processor
			r.ByStatus[v.Status]++
			if v.Status != schemas.StatusInsufficientData {
				r.Judged[v.Key] = true
			}
			if v.Status == schemas.StatusBreach {
				sloOf[v.ID] = j
				if r.FirstBreach == 0 {
					r.FirstBreach = v.WindowEndUnixNano
				}
			}
		}
		for _, c := range o.Commands {
			isOpen := c.State == schemas.StateOpen
			if isOpen && !open[c.Target] {
				for _, reason := range c.Reasons {
					if j, ok := sloOf[reason.VerdictID]; ok {
						r := &rep.SLOs[j]
						r.Trips++
						if r.FirstTrip == 0 {
							r.FirstTrip = c.IssuedAtUnixNano
						}
						if k := [2]any{j, c.Target}; !tripped[k] {
							tripped[k] = true
							r.TripTargets = append(r.TripTargets, c.Target)
						}
						break
					}
				}
			}
			open[c.Target] = isOpen
		}
	})
	return rep, err
}

// Print writes one line per SLO: verdicts by status and trips.
func (r Replay) Print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tprocessor\tok\twarn\tbreach\tinsufficient_data\ttrips\n", r.Name)
	for _, s := range r.SLOs {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%d\t%d\n", s.SLO, s.Processor,
			s.ByStatus[schemas.StatusOK], s.ByStatus[schemas.StatusWarn], s.ByStatus[schemas.StatusBreach],
			s.ByStatus[schemas.StatusInsufficientData], s.Trips)
	}
	return tw.Flush()
}

// Trips is the total of every SLO's trips.
func (r Replay) Trips() int {
	n := 0
	for _, s := range r.SLOs {
		n += s.Trips
	}
	return n
}

// batches returns the next function of replay.StreamBatches over in
// (sorted): one batch per second of event time, spans and corrections in
// order.
func batches(in *Input) func() ([]schemas.Span, []schemas.Correction, bool) {
	const step = int64(1e9)
	si, ci := 0, 0
	return func() ([]schemas.Span, []schemas.Correction, bool) {
		if si >= len(in.Spans) && ci >= len(in.Corrections) {
			return nil, nil, false
		}
		t := int64(1<<63 - 1)
		if si < len(in.Spans) {
			t = in.Spans[si].EndUnixNano
		}
		if ci < len(in.Corrections) {
			t = min(t, in.Corrections[ci].TimeUnixNano)
		}
		end := (t/step + 1) * step
		s0, c0 := si, ci
		for si < len(in.Spans) && in.Spans[si].EndUnixNano < end {
			si++
		}
		for ci < len(in.Corrections) && in.Corrections[ci].TimeUnixNano < end {
			ci++
		}
		return in.Spans[s0:si], in.Corrections[c0:ci], true
	}
}
