package burnrate

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestVerdictsIgnoreCallsAheadOfNow: the engine applies a record's calls
// as soon as it reads it, up to the allowed lateness ahead of the
// watermark, and how far ahead it is at an evaluation depends on how the
// router interleaved the source partitions. The verdicts must not: here the
// same calls are evaluated with none, 15 s and 50 s of calls ahead of each
// evaluation, for a key that is there throughout, one that first appears
// 2 s after a boundary (it got a verdict of empty windows at that boundary
// only when its first call was applied before: seen as 2 verdicts at the
// first window end missing in pipeline's TestKafkaScaleOutSameVerdictsAsOneProcess)
// and one that comes back 5 s after the boundary at which it would be
// forgotten (its CUSUM statistic carried over only when its call was
// applied before).
func TestVerdictsIgnoreCallsAheadOfNow(t *testing.T) {
	t0 := int64(1_700_000_000) / 60 * 60 * int64(time.Second)
	steady := schemas.Key{Tenant: "acme", Service: "chat", Model: "m", Variant: "baseline"}
	late := schemas.Key{Tenant: "acme", Service: "chat", Model: "m", Variant: "canary"}
	r := rand.New(rand.NewPCG(3, 4))
	var spans []schemas.Span
	add := func(k schemas.Key, from, to int64, perMinute int, errRate float64) {
		for m := from; m < to; m += minute {
			for range perMinute {
				end := m + r.Int64N(minute)
				spans = append(spans, schemas.Span{Key: k, StartUnixNano: end - 1e8, EndUnixNano: end, DurationMs: 100, Error: r.Float64() < errRate})
			}
		}
	}
	const longest = 40 * minute
	add(steady, t0, t0+120*minute, 30, 0.01)
	// First calls 2 s after the boundary at 30m.
	spans = append(spans, schemas.Span{Key: late, EndUnixNano: t0 + 30*minute + 2*int64(time.Second), DurationMs: 100, Error: true})
	add(late, t0+31*minute, t0+50*minute, 20, 0.5)
	// The last call of the first stint is before 50m: the key is forgotten
	// at the first boundary more than longest after it, 90m; it is back
	// 5 s after.
	spans = append(spans, schemas.Span{Key: late, EndUnixNano: t0 + 90*minute + 5*int64(time.Second), DurationMs: 100})
	add(late, t0+91*minute, t0+120*minute, 20, 0)
	proctest.SortByEnd(spans)

	for _, method := range []string{MethodMultiwindow, MethodCUSUM} {
		cfg := DefaultConfig()
		cfg.Method = method
		cfg.Page = []Rule{{Long: 20 * time.Minute, Short: 5 * time.Minute, Factor: 14.4}}
		cfg.Ticket = []Rule{{Long: time.Duration(longest), Short: 10 * time.Minute, Factor: 3}}
		cfg.MinEvents, cfg.MinBadEvents = 10, 2
		var want []schemas.Verdict
		for _, ahead := range []time.Duration{0, 15 * time.Second, 50 * time.Second} {
			got := runAhead(t, cfg, spans, t0, 120, int64(ahead))
			if ahead == 0 {
				want = got
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: with calls %v ahead of each evaluation: %s", method, ahead, firstDifference(want, got))
			}
		}
	}
}

// runAhead evaluates every minute after t0 for minutes, each evaluation
// after the calls before it and those up to ahead (ns) after it.
func runAhead(t *testing.T, cfg Config, spans []schemas.Span, t0 int64, minutes int, ahead int64) []schemas.Verdict {
	t.Helper()
	p, err := New(processors.Meta{SLO: "avail", ConfigVersion: "v1"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out proctest.Collector
	i := 0
	for m := 1; m <= minutes; m++ {
		now := t0 + int64(m)*minute
		for i < len(spans) && spans[i].EndUnixNano < now+ahead {
			p.ObserveSpan(spans[i].Key, &spans[i])
			i++
		}
		p.Evaluate(now, &out)
	}
	proctest.ValidateAll(t, out.Verdicts)
	return out.Verdicts
}

func firstDifference(want, got []schemas.Verdict) string {
	for i := range min(len(want), len(got)) {
		if !reflect.DeepEqual(want[i], got[i]) {
			return fmt.Sprintf("verdict %d is %s %s at %d (value %v), want %s %s at %d (value %v)", i,
				got[i].Metric, got[i].Key, got[i].WindowEndUnixNano, got[i].Value, want[i].Metric, want[i].Key, want[i].WindowEndUnixNano, want[i].Value)
		}
	}
	return fmt.Sprintf("%d verdicts, want %d", len(got), len(want))
}

// TestReturnNearTheLongestWindowIgnoresCallsAhead: with the default rules
// (the ticket's 3 d window reaches into the hourly buckets) a key whose
// last call lies in the hourly bucket the 3 d window's start cuts, and
// which comes back 5 s after the boundary at which its last call is
// exactly 3 d old, was forgotten at that boundary when its return was not
// applied yet and kept (its CUSUM and the cut bucket carried on) when it
// was: a ticket warn against an ok, a CUSUM page breach against an ok.
func TestReturnNearTheLongestWindowIgnoresCallsAhead(t *testing.T) {
	t0 := int64(1_700_000_000) / 3600 * 3600 * int64(time.Second)
	k := schemas.Key{Tenant: "acme", Service: "chat", Model: "m", Variant: "baseline"}
	var spans []schemas.Span
	for i := range 60 {
		spans = append(spans, schemas.Span{Key: k, EndUnixNano: t0 + 9*minute + int64(i)*int64(time.Second), DurationMs: 100, Error: i%2 == 0})
	}
	const days3 = 3 * 24 * 60 * minute
	back := t0 + 10*minute + days3 + 5*int64(time.Second)
	for i := range 120 {
		spans = append(spans, schemas.Span{Key: k, EndUnixNano: back + int64(i)*int64(time.Second)/2, DurationMs: 100, Error: i%3 == 0})
	}
	proctest.SortByEnd(spans)
	minutes := int((back-t0)/minute) + 5
	for _, cfg := range []Config{DefaultConfig(), cusumConfig()} {
		want := runAhead(t, cfg, spans, t0, minutes, 0)
		got := runAhead(t, cfg, spans, t0, minutes, int64(15*time.Second))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: with calls 15s ahead of each evaluation: %s", cfg.Method, firstDifference(want, got))
		}
		if len(want) == 0 {
			t.Errorf("%s: no verdict at all", cfg.Method)
		}
	}
}
