package tail

import (
	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/nosamples"
	"github.com/fusebox-dev/fusebox/schemas"
)

// MethodNoSamples labels the insufficient_data verdicts of a key whose
// calls matched the SLO but carried none of its metric (a ttft_ms SLO on
// spans without time to first token) for Config.NoSamplesEvaluations
// evaluations in a row: processors.MethodNoSamples, shared with drift
// and decay. Its details are DetailCalls, DetailEvaluations and
// DetailNoSamplesEvaluations; its Evidence lists the instrumentation
// scopes of those calls (Evidence.Scopes).
const MethodNoSamples = processors.MethodNoSamples

// Detail names of a no_samples verdict, in order (processors' names).
const (
	DetailCalls                = processors.DetailNoSamplesCalls       // calls in the window without the metric
	DetailEvaluations          = processors.DetailNoSamplesRun         // evaluations in a row with calls and no sample
	DetailNoSamplesEvaluations = processors.DetailNoSamplesEvaluations // the configured number before the verdict
)

// evaluateUnsampled emits, in key order, a no_samples verdict for every
// key whose window [now-Window, now) holds calls without the metric and
// no sample, once that has held for NoSamplesEvaluations evaluations in a
// row; sampled reports whether a key had samples in the window. A key
// that gets samples, or whose window holds no call, starts over.
func (p *Processor) evaluateUnsampled(now int64, sampled func(schemas.Key) bool, emit processors.Emitter) {
	p.unsampled.Evaluate(now, p.cfg.NoSamplesEvaluations, sampled, func(b nosamples.Blind) {
		v := p.meta.NewVerdict(Name, p.metric, b.Key, now-p.window, now)
		nosamples.Fill(&v, b, p.cfg.NoSamplesEvaluations)
		v.Threshold = p.cfg.Budget
		emit.Verdict(v)
	})
}
