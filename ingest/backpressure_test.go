package ingest

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBackPressure: a handler that never acks partition 0 stops fetching
// of partition 0 at MaxUnackedRecords (plus at most a fetch), while
// partition 1 flows to the end; acking partition 0 resumes it.
func TestBackPressure(t *testing.T) {
	k := testharness.StartKafka(t)
	machineryTopics(t, k, 2)
	const n = 40
	// One record per produce request, so that every record is its own
	// batch and a fetch of at most 400 bytes holds only a few.
	cl := k.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < n; i++ {
		for p := int32(0); p < 2; p++ {
			v := fmt.Sprintf("ok:p%d-%d:%s", p, i, strings.Repeat(".", 60))
			if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "in", Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}

	var ackP0 atomic.Bool
	s := &sink{ack: func(b *Batch) bool { return b.Partition != 0 || ackP0.Load() }}
	r := start(t, k, "g-bp", append(machineryOpts(s), MaxUnackedRecords(5),
		ClientOpts(kgo.FetchMaxPartitionBytes(400)))...)

	perPart := func() (p0, p1 int) {
		for _, rec := range s.snapshot() {
			if rec.Partition == 0 {
				p0++
			} else {
				p1++
			}
		}
		return
	}
	testharness.Eventually(t, 30*time.Second, "partition 1 delivered to the end", func() bool { _, p1 := perPart(); return p1 == n })
	testharness.Eventually(t, 30*time.Second, "partition 0 paused", func() bool { return r.c.Stats().PausedPartitions == 1 })
	time.Sleep(500 * time.Millisecond) // more fetch cycles: nothing more may come for partition 0
	p0, _ := perPart()
	if p0 < 5 || p0 > 5+10 {
		t.Fatalf("partition 0 delivered %d unacked records, want between 5 and 15 (bound 5 plus one fetch)", p0)
	}
	testharness.Eventually(t, 30*time.Second, "partition 1 committed to the end", func() bool {
		return committed(t, k, "g-bp", "in")[1] == n
	})
	if c, ok := committed(t, k, "g-bp", "in")[0]; ok {
		t.Fatalf("partition 0 committed at %d with nothing acked", c)
	}

	ackP0.Store(true)
	for _, b := range s.heldBatches() {
		b.Ack()
	}
	testharness.Eventually(t, 30*time.Second, "partition 0 resumed and delivered to the end", func() bool { p0, _ := perPart(); return p0 == n })
	// Pausing dropped nothing and repeated nothing: partition 0 arrived as
	// offsets 0..n-1, once each, in order.
	next := int64(0)
	for _, rec := range s.snapshot() {
		if rec.Partition != 0 {
			continue
		}
		if rec.Offset != next {
			t.Fatalf("partition 0: offset %d delivered where %d was due", rec.Offset, next)
		}
		next++
	}
	testharness.Eventually(t, 30*time.Second, "both partitions committed to the end", func() bool {
		c := committed(t, k, "g-bp", "in")
		return c[0] == n && c[1] == n
	})
	if st := r.c.Stats(); st.Pauses < 1 || st.PausedPartitions != 0 {
		t.Fatalf("stats: %d pauses, %d paused now; want at least 1 and 0", st.Pauses, st.PausedPartitions)
	}
}
