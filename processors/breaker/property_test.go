package breaker

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// event is one call in a generated stream: a verdict to observe, or an
// Advance to time adv.
type event struct {
	v   *schemas.Verdict
	adv int64
}

// propertyPolicy mixes actions, levels, k-of-n and a coarse target so that
// every transition happens in a few thousand events.
func propertyPolicy() Policy {
	p := DefaultPolicy()
	p.Target = []string{DimService, DimModel, DimVariant}
	p.CoolDown, p.MaxCoolDown = 2*time.Minute, 20*time.Minute
	p.CommandTTL = 6 * time.Minute
	p.FlapWindow = 30 * time.Minute
	p.EvictAfter = 6 * time.Hour
	p.CloseAfter = 2
	p.Rules = []Rule{
		{Processor: "tail", Action: schemas.ActionDegrade, Fallback: "small", K: 2, N: 4},
		{Processor: "tail", Action: schemas.ActionTrip, K: 4, N: 6},
		{Processor: "corrections", Action: schemas.ActionThrottle, ThrottleFraction: 0.3},
		{Processor: "drift", SLO: "canary", Action: schemas.ActionRollback, K: 1, N: 1},
		{Processor: "scaling", Action: schemas.ActionScaleOut, Target: []string{DimService}},
	}
	return p
}

// genStream draws a random stream: verdicts for a few keys and processors
// with a drifting breach rate, interleaved with Advance calls, event time
// moving forward by up to a minute per step and sometimes repeating or
// going back a little (late verdicts and replays). A verdict id (series and
// window end) has exactly one status in the stream: a drawn verdict whose
// id was emitted before is replaced by an exact copy of the earlier one
// (a replay), as a real evaluator would re-send, never re-judge, a window.
func genStream(seed uint64, n int) []event {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	keys := []schemas.Key{
		{Tenant: "a", Service: "chat", Model: "big", Variant: "stable"},
		{Tenant: "b", Service: "chat", Model: "big", Variant: "stable"},
		{Tenant: "a", Service: "chat", Model: "big", Variant: "canary"},
		{Tenant: "c", Service: "search", Model: "small", Variant: "stable"},
	}
	procs := []struct{ processor, slo, metric string }{
		{"tail", "latency", "duration_ms"}, {"tail", "ttft", "ttft_ms"},
		{"corrections", "quality", "correction_rate"}, {"drift", "canary", "confidence"},
		{"drift", "reference", "confidence"}, {"scaling", "mix", "entropy"}, {"decay", "align", "alignment"},
	}
	statuses := []schemas.Status{schemas.StatusOK, schemas.StatusWarn, schemas.StatusBreach, schemas.StatusInsufficientData}
	now := t0
	breachP := 0.3
	var out []event
	var last *schemas.Verdict
	emitted := map[string]schemas.Verdict{} // by id: the first verdict emitted
	for i := 0; i < n; i++ {
		if i%200 == 0 {
			breachP = r.Float64() * 0.8
		}
		switch x := r.Float64(); {
		case x < 0.1:
			now += int64(r.IntN(600)) * sec
			out = append(out, event{adv: now})
		case x < 0.13 && last != nil:
			cp := *last // a replay
			out = append(out, event{v: &cp})
		default:
			now += int64(r.IntN(60)) * sec
			end := now
			if r.Float64() < 0.05 {
				end -= int64(r.IntN(300)) * sec // late
			}
			st := statuses[r.IntN(len(statuses))]
			if st != schemas.StatusInsufficientData {
				if r.Float64() < breachP {
					st = schemas.StatusBreach
				} else if st == schemas.StatusBreach {
					st = schemas.StatusOK
				}
			}
			p := procs[r.IntN(len(procs))]
			v := mkVerdict(p.processor, p.slo, p.metric, keys[r.IntN(len(keys))], end, st)
			v.Value = r.Float64() * 200
			if first, ok := emitted[v.ID]; ok {
				v = first // same series and window end: a replay, same status
			} else {
				emitted[v.ID] = v
			}
			last = &v
			out = append(out, event{v: &v})
		}
	}
	return out
}

// play runs events through b and returns every command with, for each,
// the index of the event that produced it.
func play(b *Breaker, evs []event) (cmds []schemas.FuseCommand, at []int) {
	for i, e := range evs {
		var got []schemas.FuseCommand
		if e.v != nil {
			got = b.Observe(*e.v)
		} else {
			got = b.Advance(e.adv)
		}
		for range got {
			at = append(at, i)
		}
		cmds = append(cmds, got...)
	}
	return cmds, at
}

// refMatch is the documented rule match, written independently of
// rule.matches: the verdict's processor, and its SLO and metric unless the
// rule leaves them empty.
func refMatch(r Rule, v *schemas.Verdict) bool {
	if v.Processor != r.Processor {
		return false
	}
	if r.SLO != "" && v.SLO != r.SLO {
		return false
	}
	return r.Metric == "" || v.Metric == r.Metric
}

// refProject keeps the listed dimensions of k and makes the others "*",
// written independently of rule.target.
func refProject(dims []string, k schemas.Key) schemas.Key {
	t := schemas.Key{Tenant: "*", Service: "*", Model: "*", Variant: "*"}
	for _, d := range dims {
		switch d {
		case "tenant":
			t.Tenant = k.Tenant
		case "service":
			t.Service = k.Service
		case "model":
			t.Model = k.Model
		case "variant":
			t.Variant = k.Variant
		default:
			panic("unknown dimension " + d)
		}
	}
	return t
}

// refTargets lists the targets v is offered to under p: one per matching
// rule, projected onto the rule's target (the policy's when the rule has
// none), without repeats.
func refTargets(p Policy, v *schemas.Verdict) []schemas.Key {
	var out []schemas.Key
	for _, r := range p.Rules {
		if !refMatch(r, v) {
			continue
		}
		dims := p.Target
		if r.Target != nil {
			dims = r.Target
		}
		tk := refProject(dims, v.Key)
		if !slices.Contains(out, tk) {
			out = append(out, tk)
		}
	}
	return out
}

// TestPropertyReferenceTargets pins refTargets to hand-written answers for
// propertyPolicy, so the property below does not rest on an unchecked
// reference.
func TestPropertyReferenceTargets(t *testing.T) {
	p := propertyPolicy()
	k := schemas.Key{Tenant: "a", Service: "chat", Model: "big", Variant: "stable"}
	fine := schemas.Key{Tenant: "*", Service: "chat", Model: "big", Variant: "stable"}
	svc := schemas.Key{Tenant: "*", Service: "chat", Model: "*", Variant: "*"}
	for _, c := range []struct {
		processor, slo, metric string
		want                   []schemas.Key
	}{
		{"tail", "latency", "duration_ms", []schemas.Key{fine}}, // degrade and trip: one target
		{"tail", "ttft", "ttft_ms", []schemas.Key{fine}},
		{"corrections", "quality", "correction_rate", []schemas.Key{fine}},
		{"drift", "canary", "confidence", []schemas.Key{fine}},
		{"drift", "reference", "confidence", nil}, // the rollback rule wants SLO canary
		{"scaling", "mix", "entropy", []schemas.Key{svc}},
		{"decay", "align", "alignment", nil},
	} {
		v := mkVerdict(c.processor, c.slo, c.metric, k, t0, B)
		if got := refTargets(p, &v); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s/%s/%s: targets %v, want %v", c.processor, c.slo, c.metric, got, c.want)
		}
	}
}

func TestPropertyRandomStreams(t *testing.T) {
	p := propertyPolicy()
	var totalEvictions uint64
	totalOtherOKs := 0
	for seed := uint64(1); seed <= 30; seed++ {
		evs := genStream(seed, 4000)
		b := newBreaker(t, p)
		cmds, idx := play(b, evs)
		if len(cmds) < 20 {
			t.Fatalf("seed %d: only %d commands: the stream does not exercise the breaker", seed, len(cmds))
		}

		// The generator's contract: one status per verdict id.
		status := map[string]schemas.Status{}
		for i, e := range evs {
			if e.v == nil {
				continue
			}
			if st, ok := status[e.v.ID]; ok && st != e.v.Status {
				t.Fatalf("seed %d event %d: verdict %s emitted as %s and as %s", seed, i, e.v.ID, st, e.v.Status)
			}
			status[e.v.ID] = e.v.Status
		}

		// observed[target][verdict id]: the status of each verdict offered
		// to each target (through any matching rule, by refTargets) up to
		// each event.
		observed := map[schemas.Key]map[string]schemas.Status{}
		// byID: every verdict of the stream by id (its series and window).
		byID := map[string]*schemas.Verdict{}
		for _, e := range evs {
			if e.v != nil {
				byID[e.v.ID] = e.v
			}
		}
		// Per target, for the close rule: the series that tripped it in
		// the current incident (read from the open commands' reasons),
		// when its current half-open began (event index), and the
		// verdicts first seen since then.
		tripping := map[schemas.Key]map[sigKey]bool{}
		halfOpenAt := map[schemas.Key]int{}
		halfOpenTime := map[schemas.Key]int64{}
		seenIDs := map[string]bool{}
		var sinceHalfOpen map[schemas.Key][]*schemas.Verdict = map[schemas.Key][]*schemas.Verdict{}
		closesChecked, otherOKs := 0, 0
		lastVersion := map[schemas.Key]uint64{}
		lastIssued := map[schemas.Key]int64{}
		states := map[schemas.BreakerState]int{}
		jumps := 0
		ci := 0
		for i, e := range evs {
			if e.v != nil && e.v.Status != schemas.StatusInsufficientData {
				for _, tk := range refTargets(p, e.v) {
					if observed[tk] == nil {
						observed[tk] = map[string]schemas.Status{}
					}
					observed[tk][e.v.ID] = e.v.Status
					if _, ho := halfOpenAt[tk]; ho && !seenIDs[e.v.ID] {
						sinceHalfOpen[tk] = append(sinceHalfOpen[tk], e.v)
					}
				}
			}
			fresh := e.v != nil && !seenIDs[e.v.ID]
			if e.v != nil {
				seenIDs[e.v.ID] = true
			}
			perTarget := map[schemas.Key]bool{}
			for ; ci < len(cmds) && idx[ci] == i; ci++ {
				c := cmds[ci]
				states[c.State]++
				if err := c.Validate(); err != nil {
					t.Fatalf("seed %d event %d: invalid command: %v", seed, i, err)
				}
				if perTarget[c.Target] {
					t.Fatalf("seed %d event %d: two commands for %v in one call", seed, i, c.Target)
				}
				perTarget[c.Target] = true
				if prev, ok := lastVersion[c.Target]; ok && c.Version != prev+1 {
					// Only a new incarnation (after an eviction) may jump,
					// and only upward, to its first version.
					if c.Version <= prev || c.Version&(1<<VersionShift-1) != 1 {
						t.Fatalf("seed %d event %d: %v version %d after %d, want +1", seed, i, c.Target, c.Version, prev)
					}
					jumps++
				}
				lastVersion[c.Target] = c.Version
				if c.IssuedAtUnixNano < lastIssued[c.Target] {
					t.Fatalf("seed %d event %d: %v issued-at went backwards", seed, i, c.Target)
				}
				lastIssued[c.Target] = c.IssuedAtUnixNano
				if len(c.Reasons) == 0 {
					t.Fatalf("seed %d event %d: command without reasons", seed, i)
				}
				// doc.go, Commands: open (trip, escalation, re-trip) and
				// half-open (and their refreshes) cite the breaches behind
				// the trip; a close cites the CloseAfter ok verdicts.
				wantSt := schemas.StatusBreach
				if c.State == schemas.StateClosed {
					wantSt = schemas.StatusOK
					if len(c.Reasons) != p.CloseAfter*len(tripping[c.Target]) {
						t.Fatalf("seed %d event %d: %v close cites %d verdicts, want CloseAfter = %d per tripping series (%d)", seed, i, c.Target, len(c.Reasons), p.CloseAfter, len(tripping[c.Target]))
					}
				}
				for _, r := range c.Reasons {
					st, ok := observed[c.Target][r.VerdictID]
					if !ok {
						t.Fatalf("seed %d event %d: %v cites verdict %s never observed for it", seed, i, c.Target, r.VerdictID)
					}
					if st != wantSt {
						t.Fatalf("seed %d event %d: %s %s command for %v cites %s verdict %s, want %s", seed, i, c.Action, c.State, c.Target, st, r.VerdictID, wantSt)
					}
				}
				if c.Version&(1<<VersionShift-1) == 1 {
					// A new incarnation (first command, or after an
					// eviction): nothing of an earlier incident remains.
					delete(tripping, c.Target)
					delete(halfOpenAt, c.Target)
				}
				switch c.State {
				case schemas.StateOpen:
					if prevClosed := tripping[c.Target] == nil; prevClosed {
						tripping[c.Target] = map[sigKey]bool{}
					}
					// The last reason is the verdict that tripped it (a
					// trip cites its series' breaches, a re-trip one).
					tripping[c.Target][sigOf(byID[c.Reasons[len(c.Reasons)-1].VerdictID])] = true
					delete(halfOpenAt, c.Target)
				case schemas.StateHalfOpen:
					if _, ho := halfOpenAt[c.Target]; !ho {
						halfOpenAt[c.Target] = i
						halfOpenTime[c.Target] = c.IssuedAtUnixNano
						sinceHalfOpen[c.Target] = nil
						// The verdict whose time ended the cool-down is
						// judged in half-open.
						if fresh && e.v.Status != schemas.StatusInsufficientData && slices.Contains(refTargets(p, e.v), c.Target) {
							sinceHalfOpen[c.Target] = []*schemas.Verdict{e.v}
						}
					}
				case schemas.StateClosed:
					otherOKs += checkClose(t, seed, i, p, c, tripping[c.Target], halfOpenTime[c.Target], sinceHalfOpen[c.Target], byID)
					closesChecked++
					delete(tripping, c.Target)
					delete(halfOpenAt, c.Target)
				}
			}
		}
		if closesChecked == 0 {
			t.Fatalf("seed %d: no close to check", seed)
		}
		totalOtherOKs += otherOKs
		if uint64(jumps) > b.Stats().Evictions {
			t.Fatalf("seed %d: %d version jumps but %d evictions", seed, jumps, b.Stats().Evictions)
		}
		totalEvictions += b.Stats().Evictions
		if seed == 1 {
			t.Logf("seed 1: %d events, %d commands, states %v, stats %+v", len(evs), len(cmds), states, b.Stats())
		}
		if states[schemas.StateOpen] == 0 || states[schemas.StateHalfOpen] == 0 || states[schemas.StateClosed] == 0 {
			t.Fatalf("seed %d: states seen %v: want all three", seed, states)
		}

		// Determinism: the same stream into a fresh breaker.
		again, _ := play(newBreaker(t, p), evs)
		if !reflect.DeepEqual(cmds, again) {
			t.Fatalf("seed %d: a second run gave different commands", seed)
		}
	}
	if totalEvictions == 0 {
		t.Fatalf("no target was evicted in any stream: eviction is not exercised")
	}
	// The streams must offer oks of other series to half-open targets,
	// else "other SLOs' oks do not close" is not exercised.
	if totalOtherOKs == 0 {
		t.Fatalf("no half-open target saw an ok of a series that did not trip it")
	}
}

// sigKey names a signal as the close rule sees it: processor, SLO and
// metric (for every key of the target).
type sigKey struct {
	processor, slo, metric string
}

func sigOf(v *schemas.Verdict) sigKey {
	return sigKey{v.Processor, v.SLO, v.Metric}
}

// checkClose is the documented close rule, checked on one close command
// against the stream (written independently of the breaker): the close
// cites exactly CloseAfter ok verdicts of each series that tripped the
// target in this incident, with distinct window ends, all first seen
// since the half-open began and judging windows that start at or after
// it; after the first cited verdict of a series no
// warn or breach of that series was observed; and no breach of any
// series offered to the target came after the half-open began (it would
// have re-tripped), but for a tripping series' verdicts on windows begun
// before it (stale: ignored). It returns how many oks of other series the target
// saw while half-open (they must not have mattered).
func checkClose(t *testing.T, seed uint64, i int, p Policy, c schemas.FuseCommand, trip map[sigKey]bool, halfOpen int64, since []*schemas.Verdict, byID map[string]*schemas.Verdict) int {
	t.Helper()
	if len(trip) == 0 {
		t.Fatalf("seed %d event %d: %v closed without an open command before", seed, i, c.Target)
	}
	cited := map[sigKey][]*schemas.Verdict{}
	inSince := map[string]bool{}
	for _, v := range since {
		inSince[v.ID] = true
	}
	for _, r := range c.Reasons {
		v := byID[r.VerdictID]
		s := sigOf(v)
		if !trip[s] {
			t.Fatalf("seed %d event %d: %v close cites %s/%s/%s of %v, which did not trip it (tripping: %v)", seed, i, c.Target, v.Processor, v.SLO, v.Metric, v.Key, trip)
		}
		if v.WindowStartUnixNano < halfOpen {
			t.Fatalf("seed %d event %d: %v close cites %s whose window began before the half-open: it judged incident traffic, not the probe", seed, i, c.Target, v.ID)
		}
		if !inSince[v.ID] {
			t.Fatalf("seed %d event %d: %v close cites %s, not seen since the half-open began", seed, i, c.Target, v.ID)
		}
		cited[s] = append(cited[s], v)
	}
	for s := range trip {
		vs := cited[s]
		if len(vs) != p.CloseAfter {
			t.Fatalf("seed %d event %d: %v close cites %d verdicts of tripping series %v, want %d", seed, i, c.Target, len(vs), s, p.CloseAfter)
		}
		first := vs[0]
		ends := map[int64]bool{}
		for _, v := range vs {
			ends[v.WindowEndUnixNano] = true
		}
		if len(ends) != len(vs) {
			t.Fatalf("seed %d event %d: %v close counts one evaluation of %v twice", seed, i, c.Target, s)
		}
		after := false
		lastEnd := map[schemas.Key]int64{} // per key of the signal: a late verdict is ignored
		for _, v := range since {
			if v.ID == first.ID {
				after = true
			}
			late := sigOf(v) == s && v.WindowEndUnixNano <= lastEnd[v.Key]
			if sigOf(v) == s {
				lastEnd[v.Key] = max(lastEnd[v.Key], v.WindowEndUnixNano)
			}
			if after && !late && sigOf(v) == s && v.Status == schemas.StatusWarn && v.WindowEndUnixNano > first.WindowEndUnixNano && v.WindowStartUnixNano >= halfOpen {
				t.Fatalf("seed %d event %d: %v closed although tripping series %v warned (%s) inside its streak", seed, i, c.Target, s, v.ID)
			}
		}
	}
	others := 0
	for _, v := range since {
		if v.Status == schemas.StatusBreach && !(trip[sigOf(v)] && v.WindowStartUnixNano < halfOpen) {
			t.Fatalf("seed %d event %d: %v closed although %s/%s breached (%s) while half-open", seed, i, c.Target, v.Processor, v.SLO, v.ID)
		}
		if v.Status == schemas.StatusOK && !trip[sigOf(v)] {
			others++
		}
	}
	return others
}

func TestPropertySnapshotMidStream(t *testing.T) {
	p := propertyPolicy()
	for seed := uint64(100); seed < 110; seed++ {
		evs := genStream(seed, 3000)
		r := rand.New(rand.NewPCG(seed, 1))
		cut := 1 + r.IntN(len(evs)-1)

		whole, _ := play(newBreaker(t, p), evs)

		b1 := newBreaker(t, p)
		first, _ := play(b1, evs[:cut])
		snap, err := b1.MarshalBinary()
		if err != nil {
			t.Fatalf("MarshalBinary: %v", err)
		}
		b2 := newBreaker(t, p)
		if err := b2.UnmarshalBinary(snap); err != nil {
			t.Fatalf("UnmarshalBinary: %v", err)
		}
		snap2, err := b2.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if string(snap) != string(snap2) {
			t.Fatalf("seed %d: snapshot does not round-trip byte for byte", seed)
		}
		rest, _ := play(b2, evs[cut:])
		if !reflect.DeepEqual(whole, append(first, rest...)) {
			t.Fatalf("seed %d: restored at event %d, commands differ from an uninterrupted run", seed, cut)
		}
		if b2.Stats() != newStatsAfter(t, p, evs) {
			t.Fatalf("seed %d: stats differ after restore", seed)
		}
	}
}

func newStatsAfter(t *testing.T, p Policy, evs []event) Stats {
	b := newBreaker(t, p)
	play(b, evs)
	return b.Stats()
}

// TestPropertyOrderAcrossRestart: the commands of every target are
// strictly increasing in the fuse ordering (schemas.CompareFuseOrder:
// issued-at, then version) over a run that is restored from a snapshot
// mid-stream and, later, restarted with its state lost (a new breaker on
// the rest of the stream, as after a lost checkpoint): gateways never see
// a fusebox restart's commands as stale.
func TestPropertyOrderAcrossRestart(t *testing.T) {
	p := propertyPolicy()
	for seed := uint64(200); seed < 210; seed++ {
		evs := genStream(seed, 3000)
		cut1, cut2 := len(evs)/3, 2*len(evs)/3
		b1 := newBreaker(t, p)
		first, _ := play(b1, evs[:cut1])
		snap, err := b1.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		b2 := newBreaker(t, p)
		if err := b2.UnmarshalBinary(snap); err != nil {
			t.Fatal(err)
		}
		second, _ := play(b2, evs[cut1:cut2])
		// State lost: a fresh breaker on the rest, from a later second of
		// event time on (it reads newer records).
		third, _ := play(newBreaker(t, p), evs[cut2+20:])
		last := map[schemas.Key]schemas.FuseCommand{}
		n := 0
		for _, c := range append(append(first, second...), third...) {
			if prev, ok := last[c.Target]; ok && schemas.CompareFuseOrder(&c, &prev) <= 0 {
				t.Fatalf("seed %d: %v v%d issued %d is not after v%d issued %d", seed, c.Target, c.Version, c.IssuedAtUnixNano, prev.Version, prev.IssuedAtUnixNano)
			}
			last[c.Target] = c
			n++
		}
		if len(third) == 0 || n < 50 {
			t.Fatalf("seed %d: %d commands, %d after the state loss: not exercised", seed, n, len(third))
		}
	}
}
