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
	g := newGuard(GuardConfig{MaxModels: 1, IdleTTLNanos: 5 * s}, AllKeyDims())
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
	g2 := newGuard(g.cfg, AllKeyDims())
	r := snapcodec.NewDecoder(e.Bytes())
	g2.decodeBinary(r, true)
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

// MaxKeys bounds the combinations even when every dimension is within its
// limit: new keys fold into OverflowKey, known keys keep theirs, and the
// set survives a snapshot.
func TestGuardBoundsKeyCombinations(t *testing.T) {
	const s = int64(1e9)
	g := newGuard(GuardConfig{MaxTenants: 100, MaxModels: 100, MaxKeys: 3, IdleTTLNanos: 5 * s}, AllKeyDims())
	key := func(tenant, model string) schemas.Key { return schemas.Key{Tenant: tenant, Model: model} }
	for i, k := range []schemas.Key{key("a", "x"), key("a", "y"), key("b", "x")} {
		if got := g.admit(k, int64(i)*s); got != k {
			t.Fatalf("key %d within the bound folded: %+v", i, got)
		}
	}
	if got := g.admit(key("b", "y"), 3*s); got != OverflowKey {
		t.Fatalf("fourth key over MaxKeys 3 admitted: %+v", got)
	}
	if got := g.admit(key("a", "x"), 4*s); got != key("a", "x") {
		t.Fatalf("known key folded: %+v", got)
	}
	if got := g.admit(OverflowKey, 4*s); got != OverflowKey || g.liveKeys() != 3 {
		t.Fatalf("the overflow key took a slot: %+v, %d live", got, g.liveKeys())
	}
	e := snapcodec.NewEncoder(nil)
	g.appendBinary(e)
	g2 := newGuard(g.cfg, AllKeyDims())
	r := snapcodec.NewDecoder(e.Bytes())
	g2.decodeBinary(r, true)
	if r.Err() != nil || g2.liveKeys() != 3 || g2.keysOverflowed != 1 {
		t.Fatalf("restored %d live keys, %d overflowed (err %v), want 3 and 1", g2.liveKeys(), g2.keysOverflowed, r.Err())
	}
	if got := g2.admit(key("c", "z"), 5*s); got != OverflowKey {
		t.Fatalf("restored guard admitted a new key over the bound: %+v", got)
	}
	g2.expire(8 * s) // a/y (1 s), b/x (2 s) idle over 5 s; a/x seen at 4 s kept
	if got := g2.admit(key("c", "z"), 8*s); got != key("c", "z") || g2.liveKeys() != 2 {
		t.Fatalf("after expiry: %+v, %d live keys", got, g2.liveKeys())
	}
}
