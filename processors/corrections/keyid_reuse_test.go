package corrections

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
)

// TestKeyIDReuseNamesTheRightKey: index entries name their key by a
// 4-byte id that is released when the key has no entries and reused by
// the next key. Over 20,000 adds of 30 keys of 3 tenants, a cap of 40
// entries and a time eviction every 97 adds (thousands of reused ids),
// every live entry names the key it was added under and the keys' refs
// sum to the live entries. It fails (panics) when remove releases an id
// while an entry still holds it.
func TestKeyIDReuseNamesTheRightKey(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x := newSpanIndex(40)
	keys := make([]*keyState, 30)
	for i := range keys {
		keys[i] = &keyState{key: schemas.Key{Tenant: fmt.Sprint("t", i%3), Model: fmt.Sprint("m", i)}}
	}
	owner := map[uint64]*keyState{} // trace fingerprint -> key it was added under
	end, reused := int64(0), 0
	for step := range 20000 {
		ks := keys[r.IntN(len(keys))]
		end += int64(r.IntN(3))
		tr := traceFingerprint(tenantSeed(ks.key.Tenant), schemas.TraceID{byte(step), byte(step >> 8), byte(step >> 16), 1})
		if ks.refs == 0 && len(x.freeKeys) > 0 {
			reused++
		}
		x.add(entry{end: end, h: r.Uint64(), trace: tr, tenant: x.tenantID(ks.key.Tenant)}, ks)
		owner[tr] = ks
		if step%97 == 0 {
			x.evictBefore(end - 30)
		}
		live := x.live() // applies the cap, releasing the keys of what it drops
		var refs int32
		for _, k := range keys {
			refs += k.refs
		}
		for _, e := range live {
			if got, want := x.keyOf(e), owner[e.trace]; got != want {
				t.Fatalf("step %d: an entry names key %v, was added under %v", step, got.key, want.key)
			}
		}
		if int(refs) != len(live) || len(live) != x.len() {
			t.Fatalf("step %d: refs sum %d, %d live entries, len %d", step, refs, len(live), x.len())
		}
	}
	if reused == 0 {
		t.Fatal("no key id was reused: the test proves nothing")
	}
}
