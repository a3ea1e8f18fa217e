// Package burnrate judges the error-budget burn rate of an SLO with the
// multiwindow, multi-burn-rate alerts of the Google SRE workbook ("Alerting
// on SLOs"): an alert fires when the burn rate exceeds a factor over both a
// long and a short window.
//
// The burn rate over a window is (bad / total) / (1 - Target): 1 spends the
// error budget exactly over the SLO period, 14.4 spends 2% of a 30-day
// budget in one hour. A call is bad when it failed (span status or
// error.type), or, with LatencyThresholdMs set, when it was slower; with
// BadEvents [errors, failed_answers] also when it succeeded with a failed
// answer (cut off, filtered, empty: schemas.Answers), and with
// [failed_answers] alone errors do not count.
//
// Counts are kept per key in two rings: buckets of Every (default 1 minute)
// for the last six hours, and hourly buckets for up to the longest window.
// Windows within six hours are exact; for longer ones the hourly bucket
// that straddles a window edge is counted in proportion to its overlap — an
// error of at most one bucket at each end of a day-long window. State is
// about 3.7 KiB per key at the defaults (396 one-minute and 75 hourly
// buckets of 8 bytes: the counts in 16 bits and the start as the ring's
// turn in 32; a key's ring takes 16-byte buckets from the first bucket
// past 65,535 good or bad calls, and keeps them while this process runs);
// with failed_answers in BadEvents, 3.7 KiB more (the errors and failed
// answers of each bucket, 8 bytes a slot). The snapshot's buckets are 16
// bytes in either form.
package burnrate

import (
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/stats"
)

// Verdict metrics.
const (
	MetricPage   = "burn_rate_page"
	MetricTicket = "burn_rate_ticket"
)

// fineSpan is how far back the fine ring reaches.
const fineSpan = int64(6 * time.Hour)

// coarseWidth is the width of the coarse buckets.
const coarseWidth = int64(time.Hour)

// Processor is the burn-rate processor of one partition worker.
type Processor struct {
	meta processors.Meta
	cfg  Config

	every      int64
	nFine      int // buckets in the fine ring
	nCoarse    int // buckets in the coarse ring (0: not needed)
	longest    int64
	emitWithin int64 // a key gets verdicts while it had calls this recently
	keys       map[schemas.Key]*keyState
	order      processors.KeyOrder   // scratch
	cusum      *stats.BernoulliCUSUM // Method cusum only
	// errs: errors are bad events; answers: failed answers are (then
	// each key also keeps the split rings).
	errs, answers bool
	rule          *schemas.AnswerRule

	snapSize snapcodec.SizeHint // the last snapshot's size, for the next one's allocation
}

// split counts the bad calls of a bucket that were errors and those that
// were failed answers (bad_events with failed_answers only; the rest of
// the bad calls were slow).
type split struct {
	Errors, Failed uint32
}

type keyState struct {
	fine, coarse ring
	// fineSplit and coarseSplit parallel fine and coarse (same length and
	// slot; a slot's split is valid for the bucket in that slot), with
	// failed_answers in bad_events only.
	fineSplit, coarseSplit []split
	last                   int64 // newest event time seen
	// Method cusum: the statistic (nats) and the end of the last
	// evaluation interval folded into it (0: none yet).
	cusum   float64
	cusumAt int64
}

// New returns a burn-rate processor.
func New(meta processors.Meta, cfg Config) (*Processor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Processor{meta: meta, cfg: cfg, every: int64(cfg.Every), keys: map[schemas.Key]*keyState{},
		errs: slices.Contains(cfg.BadEvents, BadErrors), answers: cfg.UsesAnswers(), rule: meta.Answers}
	if cfg.Method == MethodCUSUM {
		c, err := stats.NewBernoulliCUSUM(1-cfg.Target, cfg.CUSUMFactor*(1-cfg.Target))
		if err != nil {
			return nil, err // unreachable: Validate checked both rates
		}
		p.cusum = &c
	}
	for _, r := range slices.Concat(cfg.Page, cfg.Ticket) {
		p.longest = max(p.longest, int64(r.Long))
		p.emitWithin = max(p.emitWithin, int64(r.Short))
	}
	fine := min(p.longest, fineSpan)
	// Slack of 10% (at least 10 buckets) holds records ahead of the
	// watermark, up to the allowed lateness.
	p.nFine = int(fine/p.every) + max(10, int(fine/p.every/10))
	if p.longest > fineSpan {
		p.nCoarse = int(p.longest/coarseWidth) + 3
	}
	return p, nil
}

// Interval is Config.Every.
func (p *Processor) Interval() time.Duration { return p.cfg.Every }

// Keys is the number of keys with counts.
func (p *Processor) Keys() int { return len(p.keys) }

// Hooks is the zero Hooks: the processor has no relay with the others.
func (p *Processor) Hooks() processors.Hooks { return processors.Hooks{} }

// ObserveCorrection ignores corrections.
func (p *Processor) ObserveCorrection(*schemas.Correction) {}

// Bad reports whether the call counts against the SLO.
func (p *Processor) Bad(s *schemas.Span) bool {
	bad, _ := p.classify(s)
	return bad
}

// classify says whether the call is bad and, when it is an error or a
// failed answer that bad_events counts, which.
func (p *Processor) classify(s *schemas.Span) (bad bool, why split) {
	if p.errs && s.Error {
		return true, split{Errors: 1}
	}
	if p.answers && p.rule.Classify(s) != schemas.AnswerOK {
		return true, split{Failed: 1}
	}
	return p.cfg.LatencyThresholdMs > 0 && s.DurationMs > p.cfg.LatencyThresholdMs, split{}
}

// ObserveSpan counts the call in its buckets.
func (p *Processor) ObserveSpan(key schemas.Key, s *schemas.Span) {
	ks := p.keys[key]
	if ks == nil {
		ks = p.newKeyState()
		p.keys[key] = ks
	}
	t := s.EndUnixNano
	ks.last = max(ks.last, t)
	bad, why := p.classify(s)
	count(&ks.fine, ks.fineSplit, processors.FloorTo(t, p.every), p.every, bad, why)
	if !ks.coarse.absent() {
		count(&ks.coarse, ks.coarseSplit, processors.FloorTo(t, coarseWidth), coarseWidth, bad, why)
	}
}

// newKeyState allocates a key's rings (and split rings with
// failed_answers).
func (p *Processor) newKeyState() *keyState {
	ks := &keyState{fine: newRing(p.nFine), coarse: newRing(p.nCoarse)}
	if p.answers {
		ks.fineSplit = make([]split, p.nFine)
		if p.nCoarse > 0 {
			ks.coarseSplit = make([]split, p.nCoarse)
		}
	}
	return ks
}

// count adds one call to the ring slot of the bucket starting at start,
// and its kind to the split ring's slot when there is one.
func count(r *ring, splits []split, start, width int64, bad bool, why split) {
	i := processors.FloorMod(start/width, r.len())
	if cur, _, _ := r.at(i, width); cur != start {
		if cur > start {
			return // older than the ring reaches: cannot happen within lateness
		}
		r.reset(i, start, width)
		if splits != nil {
			splits[i] = split{}
		}
	}
	r.inc(i, width, bad)
	if splits != nil {
		splits[i].Errors += why.Errors
		splits[i].Failed += why.Failed
	}
}

// splitWindow returns the errors and failed answers counted bad in
// [now-d, now), as window counts the calls (an hourly bucket straddling
// the edge in proportion to its overlap). Zero without split rings.
func (p *Processor) splitWindow(ks *keyState, now, d int64) (errs, failed float64) {
	if ks.fineSplit == nil {
		return 0, 0
	}
	from, fineFrom := now-d, now-d
	if d > fineSpan && !ks.coarse.absent() {
		fineFrom = now - fineSpan
	}
	for t := fineFrom; t < now; t += p.every {
		i := processors.FloorMod(t/p.every, ks.fine.len())
		if start, _, _ := ks.fine.at(i, p.every); start == t {
			errs += float64(ks.fineSplit[i].Errors)
			failed += float64(ks.fineSplit[i].Failed)
		}
	}
	if fineFrom == from {
		return errs, failed
	}
	for h := processors.FloorTo(from, coarseWidth); h < fineFrom; h += coarseWidth {
		i := processors.FloorMod(h/coarseWidth, ks.coarse.len())
		if start, _, _ := ks.coarse.at(i, coarseWidth); start != h {
			continue
		}
		lo, hi := max(h, from), min(h+coarseWidth, fineFrom)
		if hi <= lo {
			continue
		}
		f := float64(hi-lo) / float64(coarseWidth)
		errs += f * float64(ks.coarseSplit[i].Errors)
		failed += f * float64(ks.coarseSplit[i].Failed)
	}
	return errs, failed
}

// splitDetails are the errors_<d> and failed_answers_<d> details of the
// window [now-d, now), with failed_answers in bad_events only (the
// default verdicts are unchanged).
func (p *Processor) splitDetails(ks *keyState, now int64, d time.Duration) []schemas.Detail {
	if !p.answers {
		return nil
	}
	e, f := p.splitWindow(ks, now, int64(d))
	return []schemas.Detail{{Name: "errors_" + dur(d), Value: e}, {Name: "failed_answers_" + dur(d), Value: f}}
}

// sum returns the calls in [from, to) from the fine ring (from must be
// within fineSpan of to, both multiples of every).
func (p *Processor) sumFine(ks *keyState, from, to int64) (good, bad float64) {
	for t := from; t < to; t += p.every {
		if start, g, b := ks.fine.at(processors.FloorMod(t/p.every, ks.fine.len()), p.every); start == t {
			good += float64(g)
			bad += float64(b)
		}
	}
	return good, bad
}

// sumCoarse returns the calls in [from, to) from the hourly ring, counting
// a bucket that straddles an edge in proportion to its overlap.
func (p *Processor) sumCoarse(ks *keyState, from, to int64) (good, bad float64) {
	for h := processors.FloorTo(from, coarseWidth); h < to; h += coarseWidth {
		start, g, b := ks.coarse.at(processors.FloorMod(h/coarseWidth, ks.coarse.len()), coarseWidth)
		if start != h {
			continue
		}
		lo, hi := max(h, from), min(h+coarseWidth, to)
		if hi <= lo {
			continue
		}
		f := float64(hi-lo) / float64(coarseWidth)
		good += f * float64(g)
		bad += f * float64(b)
	}
	return good, bad
}

// window returns the calls in [now-d, now).
func (p *Processor) window(ks *keyState, now, d int64) (good, bad float64) {
	from := now - d
	if d <= fineSpan || ks.coarse.absent() {
		return p.sumFine(ks, from, now)
	}
	fineFrom := now - fineSpan
	g1, b1 := p.sumFine(ks, fineFrom, now)
	g2, b2 := p.sumCoarse(ks, from, fineFrom)
	return g1 + g2, b1 + b2
}

// ruleResult is one rule's evaluation.
type ruleResult struct {
	rule        Rule
	long, short float64 // burn rates
	total       float64 // calls in the long window
	bad         float64 // bad calls in the long window
	counted     bool    // the long window held MinEvents calls
	fired       bool
}

// Evaluate emits a page and a ticket verdict for every key that had calls
// in [now − longest short window, now), in key order, and forgets keys
// with no call counted in the longest window (see expired).
//
// Only calls before now decide: the worker may have applied calls at or
// after now already (up to the allowed lateness ahead of the watermark),
// and whether it has depends on how the router interleaved the source
// partitions. A key whose only recent calls are ahead of now (a key's
// first calls, or a key back from idle) therefore gets no verdict yet, and
// a key back after more than the longest window starts its statistics
// afresh whether or not its new calls were applied before this
// evaluation: the verdicts are the same for every interleaving (they
// differed at a key's first boundary when a run's partitions moved
// between processes: pipeline's TestKafkaScaleOutSameVerdictsAsOneProcess).
func (p *Processor) Evaluate(now int64, emit processors.Emitter) {
	for k, ks := range p.keys {
		// Forgotten by the same rule as the reset below (no call counted
		// in the longest window, as window counts them: a partly covered
		// hourly bucket still counts), so that a key kept because its
		// return was applied ahead of now and one forgotten because it was
		// not end in the same state.
		if ks.last < now && p.expired(ks, now) {
			delete(p.keys, k)
		}
	}
	budget := 1 - p.cfg.Target
	for _, k := range processors.SortedKeys(p.keys, &p.order) {
		ks := p.keys[k]
		if !p.hadCalls(ks, now, p.emitWithin) {
			// Idle lately: no verdict, state kept for the long windows.
			if ks.last >= now && p.stale(ks, now) {
				// Only calls ahead of now are left of it: as the key
				// dropped above and made anew by those calls would be.
				ks.cusum, ks.cusumAt = 0, 0
			}
			continue
		}
		rate := func(d time.Duration) (burn, total, bad float64) {
			g, b := p.window(ks, now, int64(d))
			if g+b == 0 {
				return 0, 0, 0
			}
			return b / (g + b) / budget, g + b, b
		}
		if p.cusum != nil {
			p.foldCUSUM(ks, now)
		}
		for _, set := range []struct {
			metric string
			rules  []Rule
		}{{MetricPage, p.cfg.Page}, {MetricTicket, p.cfg.Ticket}} {
			if len(set.rules) == 0 {
				continue
			}
			if set.metric == MetricPage && p.cusum != nil {
				emit.Verdict(p.cusumVerdict(k, ks, now))
				continue
			}
			res := make([]ruleResult, len(set.rules))
			for i, r := range set.rules {
				long, total, bad := rate(r.Long)
				short, _, _ := rate(r.Short)
				res[i] = ruleResult{rule: r, long: long, short: short, total: total, bad: bad,
					counted: total >= float64(p.cfg.MinEvents) && total > 0}
				res[i].fired = res[i].counted && long > r.Factor && short > r.Factor && p.significant(bad, total, r.Factor*budget)
			}
			emit.Verdict(p.verdict(k, ks, now, set.metric, res))
		}
	}
}

// stale reports whether ks had no call in [now − longest window, now).
func (p *Processor) stale(ks *keyState, now int64) bool { return !p.hadCalls(ks, now, p.longest) }

// expired is stale for a key whose calls are all before now (ks.last is
// then its last call), without the bucket walk unless the last call lies
// within an hourly bucket of the window's start: a call later than that is
// counted at any granularity, one earlier by none.
func (p *Processor) expired(ks *keyState, now int64) bool {
	switch from := now - p.longest; {
	case ks.last >= from+coarseWidth:
		return false
	case ks.last < from-coarseWidth:
		return true
	}
	return p.stale(ks, now)
}

// hadCalls reports whether ks counted a call in [now − d, now), as window
// does (beyond the fine ring, at the coarse ring's hour granularity),
// looking from now backwards and stopping at the first.
func (p *Processor) hadCalls(ks *keyState, now, d int64) bool {
	from := now - d
	fineFrom := from
	if d > fineSpan && !ks.coarse.absent() {
		fineFrom = now - fineSpan
	}
	for t := now - p.every; t >= fineFrom; t -= p.every {
		if start, g, b := ks.fine.at(processors.FloorMod(t/p.every, ks.fine.len()), p.every); start == t && g+b > 0 {
			return true
		}
	}
	if fineFrom == from {
		return false
	}
	g, b := p.sumCoarse(ks, from, fineFrom)
	return g+b > 0
}

// foldCUSUM adds the intervals since the key's last evaluation (at most
// the fine ring's reach) to its CUSUM, one Step per interval, and caps the
// statistic at twice the threshold so that it falls below the threshold
// within about CUSUMThreshold/|WGood| good calls of an incident's end.
func (p *Processor) foldCUSUM(ks *keyState, now int64) {
	from := ks.cusumAt
	if from == 0 || from < now-fineSpan {
		from = now - p.every
	}
	for t := from; t < now; t += p.every {
		g, b := p.sumFine(ks, t, t+p.every)
		ks.cusum = min(p.cusum.Step(ks.cusum, b, g), 2*p.cfg.CUSUMThreshold)
	}
	ks.cusumAt = now
}

// cusumVerdict is the page verdict of method cusum: breach while the
// statistic is at least CUSUMThreshold; insufficient_data while the longest
// page rule's long window holds fewer than MinEvents calls.
func (p *Processor) cusumVerdict(k schemas.Key, ks *keyState, now int64) schemas.Verdict {
	long := p.cfg.Page[0].Long
	for _, r := range p.cfg.Page {
		long = max(long, r.Long)
	}
	v := p.meta.NewVerdict(Name, MetricPage, k, now-int64(long), now)
	v.Method = "bernoulli_cusum"
	g, b := p.window(ks, now, int64(long))
	g1, b1 := p.sumFine(ks, now-p.every, now)
	v.N = int64(g + b)
	v.Status = schemas.StatusInsufficientData
	if g+b >= float64(max(p.cfg.MinEvents, 1)) {
		v.Status = schemas.StatusOK
		if ks.cusum >= p.cfg.CUSUMThreshold {
			v.Status = schemas.StatusBreach
		}
	}
	v.Value = ks.cusum
	v.Threshold = p.cfg.CUSUMThreshold
	burn := func(g, b float64) float64 {
		if g+b == 0 {
			return 0
		}
		return b / (g + b) / (1 - p.cfg.Target)
	}
	v.Details = []schemas.Detail{
		{Name: "cusum_nats", Value: ks.cusum},
		{Name: "cusum_threshold", Value: p.cfg.CUSUMThreshold},
		{Name: "cusum_factor", Value: p.cfg.CUSUMFactor},
		{Name: "burn_" + dur(p.cfg.Every), Value: burn(g1, b1)},
		{Name: "burn_" + dur(long), Value: burn(g, b)},
		{Name: "calls_" + dur(long), Value: g + b},
	}
	v.Details = append(v.Details, p.splitDetails(ks, now, long)...)
	return v
}

// significant reports whether there were at least MinBadEvents bad calls
// and the error rate bad/total exceeds limit with the configured
// confidence (the Wilson lower bound is above it).
func (p *Processor) significant(bad, total, limit float64) bool {
	if bad < float64(p.cfg.MinBadEvents) {
		return false
	}
	if p.cfg.Confidence == 0 {
		return true
	}
	lo, _, err := stats.Wilson(int64(math.Round(bad)), int64(math.Round(total)), p.cfg.Confidence)
	return err == nil && lo > limit
}

// verdict turns the rule results into a verdict: Value is the burn rate of
// the rule closest to firing (the smaller of its two windows' rates,
// relative to its factor), Threshold that rule's factor.
func (p *Processor) verdict(k schemas.Key, ks *keyState, now int64, metric string, res []ruleResult) schemas.Verdict {
	longest := res[0].rule.Long
	for _, r := range res {
		longest = max(longest, r.rule.Long)
	}
	v := p.meta.NewVerdict(Name, metric, k, now-int64(longest), now)
	v.Method = "multiwindow_multi_burn_rate"
	best, counted := -1, false
	for i, r := range res {
		counted = counted || r.counted
		if !r.counted {
			continue
		}
		if best < 0 || math.Min(r.long, r.short)/r.rule.Factor > math.Min(res[best].long, res[best].short)/res[best].rule.Factor {
			best = i
		}
	}
	v.Status = schemas.StatusInsufficientData
	if counted {
		v.Status = schemas.StatusOK
		b := res[best]
		v.Value = math.Min(b.long, b.short)
		v.Threshold = b.rule.Factor
		v.N = int64(b.total)
		for _, r := range res {
			if r.fired {
				v.Status = schemas.StatusBreach
				break
			}
			// The long window burns (beyond the low-traffic guard that
			// firing needs: one error in a few hundred calls is a burn
			// rate of 7 at 99.9% but no incident), the short one has
			// recovered.
			if r.counted && r.long > r.rule.Factor && p.significant(r.bad, r.total, r.rule.Factor*(1-p.cfg.Target)) {
				v.Status = schemas.StatusWarn
			}
		}
	}
	for _, r := range res {
		v.Details = append(v.Details,
			schemas.Detail{Name: "burn_" + dur(r.rule.Long), Value: r.long},
			schemas.Detail{Name: "burn_" + dur(r.rule.Short), Value: r.short},
			schemas.Detail{Name: "factor_" + dur(r.rule.Long), Value: r.rule.Factor},
			schemas.Detail{Name: "calls_" + dur(r.rule.Long), Value: r.total})
		v.Details = append(v.Details, p.splitDetails(ks, now, r.rule.Long)...)
	}
	v.Details = append(v.Details, schemas.Detail{Name: "budget_remaining_" + dur(longest), Value: p.remaining(res, longest)})
	return v
}

// remaining is the share of the error budget left over the longest window:
// 1 - burn rate there (negative when overspent).
func (p *Processor) remaining(res []ruleResult, longest time.Duration) float64 {
	for _, r := range res {
		if r.rule.Long == longest {
			return 1 - r.long
		}
	}
	return 1
}

// dur renders a duration compactly: 5m, 1h, 1d, 3d.
func dur(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	case d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	case d%time.Minute == 0:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	}
	return strconv.Itoa(int(d/time.Second)) + "s"
}
