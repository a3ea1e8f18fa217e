package rollup

import (
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

func spans(r *rand.Rand, n int, key schemas.Key, t0 int64) []schemas.Span {
	out := make([]schemas.Span, n)
	for i := range out {
		end := t0 + r.Int64N(3*Minute)
		s := schemas.Span{Key: key, StartUnixNano: end - 1e6, EndUnixNano: end, InputTokens: 10, OutputTokens: 20,
			Has: schemas.HasInputTokens | schemas.HasOutputTokens | schemas.HasTTFT, TTFTMs: 0.5, Error: i%10 == 0}
		binary.LittleEndian.PutUint64(s.TraceID[:], r.Uint64())
		binary.LittleEndian.PutUint64(s.SpanID[:], r.Uint64())
		s.Derive()
		out[i] = s
	}
	return out
}

func TestRowsPerClosedMinuteAndLate(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	k := schemas.Key{Tenant: "t", Service: "s", Model: "m", Variant: "v"}
	t0 := int64(1_000) * Minute
	xs := spans(r, 3000, k, t0)
	p, _ := New(Config{MaxSamplesPerMinute: 100})
	proctest.ObserveAll(p, xs)
	var out proctest.Collector
	p.Evaluate(t0+2*Minute, &out)
	if len(out.Rollups) != 2 {
		t.Fatalf("%d rows, want 2 closed minutes", len(out.Rollups))
	}
	p.ObserveLate(k, t0)
	p.Evaluate(t0+3*Minute, &out)
	if len(out.Rollups) != 3 || out.Rollups[2].LateSpans != 1 {
		t.Fatalf("rows %d, last late %d; want the late span on the next row", len(out.Rollups), out.Rollups[len(out.Rollups)-1].LateSpans)
	}
	var n, errs, in int64
	for _, row := range out.Rollups {
		n += row.N
		errs += row.Errors
		in += row.InputTokens
		if len(row.DurationsMs) != 100 || len(row.TTFTsMs) != 100 {
			t.Fatalf("row keeps %d durations, want the cap 100", len(row.DurationsMs))
		}
	}
	if n != 3000 || errs != 300 || in != 30000 {
		t.Fatalf("totals n=%d errors=%d input=%d", n, errs, in)
	}
	if p.Keys() != 0 {
		t.Fatalf("%d keys left after every minute closed", p.Keys())
	}
}

func TestOrderAndSnapshotDoNotChangeRows(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	k := schemas.Key{Tenant: "t"}
	t0 := int64(50) * Minute
	xs := spans(r, 2000, k, t0)
	run := func(xs []schemas.Span, snapAt int) []schemas.Rollup {
		p, _ := New(Config{MaxSamplesPerMinute: 50})
		var out proctest.Collector
		for i := range xs {
			if i == snapAt {
				b, _ := p.MarshalBinary()
				p, _ = New(Config{MaxSamplesPerMinute: 50})
				if err := p.UnmarshalBinary(b); err != nil {
					t.Fatal(err)
				}
			}
			p.ObserveSpan(k, &xs[i])
		}
		p.Evaluate(t0+4*Minute, &out)
		return out.Rollups
	}
	want := run(xs, -1)
	ys := append([]schemas.Span(nil), xs...)
	r.Shuffle(len(ys), func(i, j int) { ys[i], ys[j] = ys[j], ys[i] })
	if got := run(ys, 1000); !reflect.DeepEqual(got, want) {
		t.Fatal("shuffled input with a snapshot in the middle gave other rows")
	}
	p, _ := New(Config{MaxSamplesPerMinute: 50})
	for i := range xs[:500] {
		p.ObserveSpan(k, &xs[i])
	}
	p.ObserveLate(k, t0)
	snap, _ := p.MarshalBinary()
	proctest.RejectsDamage(t, func() processors.Processor {
		q, _ := New(Config{MaxSamplesPerMinute: 50})
		return q
	}, snap, ErrCorrupt)
}

func TestCorrectionsCountInTheirMinuteElseOnTheNextRow(t *testing.T) {
	k := schemas.Key{Tenant: "t", Service: "s", Model: "m", Variant: "v"}
	unjoined := schemas.Key{Tenant: "t", Model: "m"}
	t0 := int64(2_000) * Minute
	p, _ := New(Config{MaxSamplesPerMinute: 10})
	s := schemas.Span{Key: k, StartUnixNano: t0 + 1e9, EndUnixNano: t0 + 2e9}
	s.Derive()
	p.ObserveSpan(k, &s)
	p.CountCorrection(k, t0+30e9)        // its minute is open: counted in it
	p.CountCorrection(unjoined, t0+40e9) // a key without spans: carried
	var out proctest.Collector
	p.Evaluate(t0+Minute, &out)
	p.CountCorrection(k, t0+50e9) // its minute's row is written: carried
	p.Evaluate(t0+2*Minute, &out)
	got := map[schemas.Key][]int64{}
	for _, r := range out.Rollups {
		got[r.Key] = append(got[r.Key], r.MinuteUnixNano/Minute-2000, r.Corrections, r.N)
	}
	want := map[schemas.Key][]int64{
		k:        {0, 1, 1, 1, 1, 0}, // minute 0: 1 correction, 1 span; minute 1: the carried one
		unjoined: {0, 1, 0},
	}
	for key, w := range want {
		if g := got[key]; !slices.Equal(g, w) {
			t.Fatalf("%v: rows (minute, corrections, spans) %v, want %v", key, g, w)
		}
	}
	if p.Keys() != 0 {
		t.Fatalf("%d keys left", p.Keys())
	}
}
