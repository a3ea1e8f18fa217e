package breaker

import (
	"math/rand/v2"
	"reflect"
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
// going back a little (late verdicts and replays).
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

func TestPropertyRandomStreams(t *testing.T) {
	p := propertyPolicy()
	rules := compile(&p)
	var totalEvictions uint64
	for seed := uint64(1); seed <= 30; seed++ {
		evs := genStream(seed, 4000)
		b := newBreaker(t, p)
		cmds, idx := play(b, evs)
		if len(cmds) < 20 {
			t.Fatalf("seed %d: only %d commands: the stream does not exercise the breaker", seed, len(cmds))
		}

		// observed[target][verdict id]: the verdicts offered to each target
		// (through any matching rule) up to each event.
		observed := map[schemas.Key]map[string]bool{}
		lastVersion := map[schemas.Key]uint64{}
		lastIssued := map[schemas.Key]int64{}
		states := map[schemas.BreakerState]int{}
		jumps := 0
		ci := 0
		for i, e := range evs {
			if e.v != nil && e.v.Status != schemas.StatusInsufficientData {
				for j := range rules {
					if rules[j].matches(e.v) {
						tk := rules[j].target(e.v.Key)
						if observed[tk] == nil {
							observed[tk] = map[string]bool{}
						}
						observed[tk][e.v.ID] = true
					}
				}
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
				for _, r := range c.Reasons {
					if !observed[c.Target][r.VerdictID] {
						t.Fatalf("seed %d event %d: %v cites verdict %s never observed for it", seed, i, c.Target, r.VerdictID)
					}
				}
			}
		}
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
