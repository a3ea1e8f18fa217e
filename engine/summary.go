package engine

import (
	"slices"
	"strings"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

// summaries appends the summaries of the SLOs due at boundary b, and
// moves the breaker's commands of attributed SLOs (out.Commands from
// first) into them.
func (w *Worker) summaries(b int64, due []sloSpan, verdicts []schemas.Verdict, first int) {
	cmds := w.out.Commands[first:]
	sums := make([]schemas.EvalSummary, len(due))
	for i, d := range due {
		sums[i] = summarize(d.s.spec.Meta, w.partition, b, verdicts[d.from:d.to], cmds)
	}
	if len(w.cfg.AttributedSLOs) > 0 {
		var kept []schemas.FuseCommand
	next:
		for _, c := range cmds {
			for _, id := range c.CorrelationIDs {
				name, ok := strings.CutPrefix(id, "slo:")
				if !ok || !slices.Contains(w.cfg.AttributedSLOs, name) {
					continue
				}
				for i, d := range due {
					if d.s.spec.Meta.SLO == name {
						sums[i].Commands = append(sums[i].Commands, c)
						continue next
					}
				}
			}
			kept = append(kept, c)
		}
		w.out.Commands = append(w.out.Commands[:first], kept...)
	}
	w.out.Summaries = append(w.out.Summaries, sums...)
}

// summarize is the evaluation summary of one SLO at boundary b from its
// verdicts there (in key order) and the commands the breaker issued at b:
// each key's worst status (breach > warn > ok; a key with only
// insufficient_data is left out) and whether the breaker opened a target
// holding it for this SLO (an open command citing "slo:NAME").
func summarize(meta processors.Meta, partition int32, b int64, vs []schemas.Verdict, cmds []schemas.FuseCommand) schemas.EvalSummary {
	sum := schemas.EvalSummary{SLO: meta.SLO, AtUnixNano: b, Partition: partition}
	var trips []schemas.Key
	for i := range cmds {
		if cmds[i].State == schemas.StateOpen && slices.Contains(cmds[i].CorrelationIDs, "slo:"+meta.SLO) {
			trips = append(trips, cmds[i].Target)
		}
	}
	for i := range vs {
		v := &vs[i]
		if sum.Processor == "" {
			sum.Processor = v.Processor
		}
		if v.Status == schemas.StatusInsufficientData {
			continue
		}
		n := len(sum.Keys)
		if n > 0 && sum.Keys[n-1].Key == v.Key {
			if rank(v.Status) > rank(sum.Keys[n-1].Status) {
				sum.Keys[n-1].Status = v.Status
			}
			continue
		}
		k := schemas.SummaryKey{Key: v.Key, Status: v.Status}
		for _, t := range trips {
			k.Tripped = k.Tripped || t.Matches(v.Key)
		}
		sum.Keys = append(sum.Keys, k)
	}
	// Verdicts come sorted by key string then metric (compareVerdicts), so
	// one key's verdicts are adjacent; sorting again keeps the order a
	// property of this function.
	slices.SortFunc(sum.Keys, func(a, b schemas.SummaryKey) int { return strings.Compare(a.Key.String(), b.Key.String()) })
	return sum
}

func rank(s schemas.Status) int {
	switch s {
	case schemas.StatusBreach:
		return 2
	case schemas.StatusWarn:
		return 1
	}
	return 0
}
