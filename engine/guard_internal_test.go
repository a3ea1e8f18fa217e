package engine

import (
	"testing"

	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"github.com/fusebox-dev/fusebox/schemas"
)

// A value idle for longer than IdleTTLNanos (event time) frees its slot for
// a new one; the admitted set and the counts survive a snapshot.
func TestGuardForgetsIdleValuesAndSnapshots(t *testing.T) {
	const s = int64(1e9)
	g := newGuard(GuardConfig{MaxModels: 1, IdleTTLNanos: 5 * s})
	key := func(model string) schemas.Key { return schemas.Key{Tenant: "t", Model: model} }
	if k := g.admit(key("a"), 0); k.Model != "a" {
		t.Fatalf("first model folded: %+v", k)
	}
	if k := g.admit(key("b"), 1*s); k.Model != Overflow {
		t.Fatalf("second model over the limit of 1 admitted: %+v", k)
	}
	g.expire(4 * s) // a seen at 0: idle 4 s < 5 s, kept
	if k := g.admit(key("b"), 4*s); k.Model != Overflow {
		t.Fatalf("b admitted while a was idle only 4 s: %+v", k)
	}
	g.expire(6 * s) // a idle 6 s: forgotten
	if k := g.admit(key("b"), 6*s); k.Model != "b" {
		t.Fatalf("b still folded after a idled out: %+v", k)
	}
	if got := g.overflowed(); got != [4]int64{0, 0, 2, 0} {
		t.Fatalf("overflow counts %v, want 2 for models", got)
	}

	e := snapcodec.NewEncoder(nil)
	g.appendBinary(e)
	g2 := newGuard(g.cfg)
	r := snapcodec.NewDecoder(e.Bytes())
	g2.decodeBinary(r)
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	if g2.overflowed() != g.overflowed() {
		t.Fatalf("restored counts %v, want %v", g2.overflowed(), g.overflowed())
	}
	if k := g2.admit(key("a"), 7*s); k.Model != Overflow {
		t.Fatalf("restored guard admitted a over b: %+v", k)
	}
	if k := g2.admit(key("b"), 7*s); k.Model != "b" {
		t.Fatalf("restored guard lost b: %+v", k)
	}
}
