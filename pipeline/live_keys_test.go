package pipeline_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLiveKeyFloodKeepsMemoryBoundedAndKnownTenantsJudged floods, while
// two tenants' valid traffic flows live, 100 tenants × 100 models — 10,000
// keys, each dimension well within its own limit — at live pace. With
// keys.max_keys 150 per keyed partition (2 partitions) the live keys stay
// at the bound, the flood folds into the overflow key (counted), the heap
// grows by far less than 10,000 keys' state, and the known tenants keep
// their verdicts. Before the fix every combination got state of its own.
func TestLiveKeyFloodKeepsMemoryBoundedAndKnownTenantsJudged(t *testing.T) {
	const maxKeys, partitions = 150, 2
	k, _, log, run := startLive(t, liveOpts{suffix: ".keys", keyed: partitions,
		extra: "keys: {max_tenants: 1000, max_models: 1000, max_keys: " + strconv.Itoa(maxKeys) + "}\n"})
	healthy := []string{"acme", "globex"}
	pub := startPublisher(t, k, healthy)
	log.waitVerdicts(t, time.Now(), 30*time.Second, healthy...)
	heap0 := heapAfterGC()

	// The flood: 10,000 keys, 3 spans each, over ~5 s of wall time.
	names := schemas.DefaultAttributeNames()
	flood := time.Now()
	const tenants, models, perKey = 100, 100, 3
	var seq uint64 = 1 << 43
	for round := 0; round < 50; round++ {
		now := time.Now()
		var recs []*kgo.Record
		var spans []schemas.Span
		for i := round * tenants * models * perKey / 50; i < (round+1)*tenants*models*perKey/50; i++ {
			key := i % (tenants * models)
			seq++
			spans = append(spans, liveSpan(seq, "flood-"+strconv.Itoa(key/models), "m-"+strconv.Itoa(key%models), now))
			if len(spans) == 200 {
				recs = append(recs, &kgo.Record{Topic: "otlp_spans", Partition: int32(len(recs) % liveSourcePartitions),
					Value: schemas.EncodeOTLPProto(nil, spans, names)})
				spans = nil
			}
		}
		produceSync(t, pub.cl, recs...)
		time.Sleep(100 * time.Millisecond)
	}
	after := time.Now()
	got := log.waitVerdicts(t, after.Add(2*time.Second), 20*time.Second, healthy...)
	t.Logf("flood of %d keys took %v; the known tenants' verdicts for windows ending 2s after it came %v after it",
		tenants*models, after.Sub(flood).Round(10*time.Millisecond), got.Sub(after).Round(10*time.Millisecond))

	st := run.p.Keyed().Stats()
	if st.LiveKeys > maxKeys*partitions {
		t.Errorf("%d live keys, bound %d per partition × %d", st.LiveKeys, maxKeys, partitions)
	}
	if st.KeysOverflowed == 0 {
		t.Errorf("no span was folded into the overflow key")
	}
	heap1 := heapAfterGC()
	growth := int64(heap1) - int64(heap0)
	t.Logf("live keys %d, spans folded into the overflow key %d, heap %.1f → %.1f MiB",
		st.LiveKeys, st.KeysOverflowed, float64(heap0)/(1<<20), float64(heap1)/(1<<20))
	// 10,000 keys with a few spans each take ~40 MiB of processor state
	// (BenchmarkLiveKeyMemory: ~150 MiB with 20 spans each); 300 keys
	// take a small fraction of that.
	if growth > 25<<20 {
		t.Errorf("heap grew by %.1f MiB over the flood", float64(growth)/(1<<20))
	}
	var overflowVerdict bool
	log.mu.Lock()
	for _, v := range log.verdicts {
		if v.Key.Tenant == engine.Overflow {
			overflowVerdict = true
		}
	}
	log.mu.Unlock()
	if !overflowVerdict {
		t.Errorf("no verdict for the overflow key: the flood was not judged as one")
	}
	pub.halt()
	run.stop(t)
}
