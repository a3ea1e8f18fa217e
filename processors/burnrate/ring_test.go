package burnrate

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"github.com/fusebox-dev/fusebox/schemas"
)

// toFull gives every key's rings their full lengths (the buckets in the
// slots the full ring puts them): the rings before minRing.
func toFull(p *Processor) {
	full := func(ring []bucket, splits []split, n int, width int64) ([]bucket, []split) {
		if len(ring) == n {
			return ring, splits
		}
		r := make([]bucket, n)
		var sp []split
		if splits != nil {
			sp = make([]split, n)
		}
		for i, b := range ring {
			if b.Good+b.Bad > 0 {
				j := processors.FloorMod(b.Start/width, int64(n))
				r[j] = b
				if sp != nil {
					sp[j] = splits[i]
				}
			}
		}
		return r, sp
	}
	for _, ks := range p.keys {
		ks.fine, ks.fineSplit = full(ks.fine, ks.fineSplit, p.nFine, p.every)
		if ks.coarse != nil {
			ks.coarse, ks.coarseSplit = full(ks.coarse, ks.coarseSplit, p.nCoarse, coarseWidth)
		}
	}
}

// intermittent is 30 hours of calls of two keys: one with a call a minute
// on average, one in bursts with silences of up to 9 hours (longer than the
// fine ring's reach), some calls up to 10 s late, a third of them bad and
// some failed answers.
func intermittent() []schemas.Span {
	r := rand.New(rand.NewPCG(25, 2))
	t0 := int64(1_700_000_000) / 60 * 60 * int64(time.Second)
	other := key
	other.Model = "m2"
	var out []schemas.Span
	add := func(k schemas.Key, end int64) {
		s := schemas.Span{Key: k, StartUnixNano: end - 1e8, EndUnixNano: end, DurationMs: 100, FinishReason: "stop",
			Error: r.Float64() < 0.3}
		if r.Float64() < 0.1 {
			s.FinishReason = "MAX_TOKENS"
		}
		out = append(out, s)
	}
	for t := t0; t < t0+30*60*minute; t += r.Int64N(2 * minute) {
		add(key, t)
	}
	for t := t0; t < t0+30*60*minute; {
		for range 1 + r.IntN(40) {
			add(other, t)
			t += r.Int64N(3 * minute)
		}
		t += r.Int64N(9 * 60 * minute)
	}
	proctest.SortByEnd(out)
	for i := range out { // a few calls arrive up to 10 s late
		if j := i + 1; j < len(out) && r.Float64() < 0.05 && out[j].EndUnixNano-out[i].EndUnixNano < 10*int64(time.Second) {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// TestShortRingsGiveTheFullRingsVerdicts: rings that start short and grow
// give, every minute of 30 hours of intermittent traffic (silences longer
// than the fine ring's reach, late calls), the verdicts of rings of the
// full length, with the default rules, with failed answers split and
// with method cusum; and a young key's rings are short.
func TestShortRingsGiveTheFullRingsVerdicts(t *testing.T) {
	spans := intermittent()
	t0 := spans[0].EndUnixNano / minute * minute
	answers := DefaultConfig()
	answers.BadEvents = []string{BadErrors, BadFailedAnswers}
	cusum := DefaultConfig()
	cusum.Method = MethodCUSUM
	for name, cfg := range map[string]Config{"default": DefaultConfig(), "answers": answers, "cusum": cusum} {
		t.Run(name, func(t *testing.T) {
			meta := processors.Meta{SLO: "avail", ConfigVersion: "v1"}
			short, _ := New(meta, cfg)
			dense, _ := New(meta, cfg)
			var got, want proctest.Collector
			i := 0
			grew := false
			for m := 1; m <= 31*60; m++ {
				now := t0 + int64(m)*minute
				for ; i < len(spans) && spans[i].EndUnixNano < now; i++ {
					short.ObserveSpan(spans[i].Key, &spans[i])
					dense.ObserveSpan(spans[i].Key, &spans[i])
					toFull(dense)
				}
				if m == 3 {
					for k, ks := range short.keys {
						if len(ks.fine) != minRing {
							t.Fatalf("key %v after 3 minutes: fine ring of %d buckets, want %d", k, len(ks.fine), minRing)
						}
					}
				}
				for _, ks := range short.keys {
					grew = grew || len(ks.fine) == short.nFine
				}
				short.Evaluate(now, &got)
				dense.Evaluate(now, &want)
			}
			if !grew {
				t.Fatal("no ring grew to its full length: the test does not exercise growth")
			}
			if len(want.Verdicts) == 0 || !reflect.DeepEqual(got.Verdicts, want.Verdicts) {
				t.Fatalf("short rings: %d verdicts, full rings %d; they differ", len(got.Verdicts), len(want.Verdicts))
			}
		})
	}
}

// marshalV1 writes p's state in snapshot version 1 (dense rings of the
// full lengths, then the split rings), as fusebox before minRing did.
func marshalV1(p *Processor) []byte {
	toFull(p)
	return snapshotFormatV1.Marshal(func(e *snapcodec.Encoder) {
		snapcodec.PutKeyed(e, processors.SortedKeys(p.keys, &p.order), p.keys, func(ks *keyState, e *snapcodec.Encoder) {
			e.I64(ks.last)
			for _, ring := range [][]bucket{ks.fine, ks.coarse} {
				e.Count(len(ring))
				for _, x := range ring {
					e.I64(x.Start)
					e.U32(x.Good)
					e.U32(x.Bad)
				}
			}
			if p.cusum != nil {
				e.F64(ks.cusum)
				e.I64(ks.cusumAt)
			}
			if p.answers {
				for _, ring := range [][]split{ks.fineSplit, ks.coarseSplit} {
					e.Count(len(ring))
					for _, x := range ring {
						e.U32(x.Errors)
						e.U32(x.Failed)
					}
				}
			}
		})
	})
}

// TestSnapshotV1RestoresAndV2IsSmaller: a version 1 snapshot (dense rings)
// restores and the processor goes on with the verdicts of one never
// restored; the version 2 snapshot of a young key is a fraction of version
// 1's; a damaged version 2 snapshot is refused.
func TestSnapshotV1RestoresAndV2IsSmaller(t *testing.T) {
	spans := intermittent()
	t0 := spans[0].EndUnixNano / minute * minute
	cfg := DefaultConfig()
	cfg.BadEvents = []string{BadErrors, BadFailedAnswers}
	meta := processors.Meta{SLO: "avail", ConfigVersion: "v1"}
	orig, _ := New(meta, cfg)
	var want, got proctest.Collector
	var restored *Processor
	i := 0
	for m := 1; m <= 20*60; m++ {
		now := t0 + int64(m)*minute
		for ; i < len(spans) && spans[i].EndUnixNano < now; i++ {
			orig.ObserveSpan(spans[i].Key, &spans[i])
			if restored != nil {
				restored.ObserveSpan(spans[i].Key, &spans[i])
			}
		}
		orig.Evaluate(now, &want)
		if restored != nil {
			restored.Evaluate(now, &got)
		}
		if m == 10 {
			v2, _ := orig.MarshalBinary()
			copyP, _ := New(meta, cfg)
			if err := copyP.UnmarshalBinary(v2); err != nil {
				t.Fatal(err)
			}
			v1 := marshalV1(copyP)
			if len(v2)*5 > len(v1) {
				t.Errorf("after 10 minutes: version 2 snapshot %d bytes, version 1 %d: want under a fifth", len(v2), len(v1))
			}
			proctest.RejectsDamage(t, func() processors.Processor { q, _ := New(meta, cfg); return q }, v2, ErrCorrupt)
		}
		if m == 8*60 {
			restored, _ = New(meta, cfg)
			if err := restored.UnmarshalBinary(marshalV1(orig)); err != nil {
				t.Fatal(err)
			}
			want.Verdicts = nil
		}
	}
	if len(want.Verdicts) == 0 || !reflect.DeepEqual(got.Verdicts, want.Verdicts) {
		t.Fatalf("restored from version 1: %d verdicts, never restored %d; they differ", len(got.Verdicts), len(want.Verdicts))
	}
}
