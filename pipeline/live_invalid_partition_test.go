package pipeline_test

import (
	"context"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLiveRejectedOnlyPartitionDoesNotHoldTheWatermark: source partition
// 0 carries one valid span, then only records that are rejected —
// malformed bytes, spans that fail validation, spans without a model —
// twenty a second, while the other five partitions carry valid traffic
// live. Before the fix the rejected stream kept partition 0 "active" at
// its one valid event time and no verdict came for as long as it lasted;
// now partition 0 goes idle after time.idle_source_timeout without a
// valid event, and the healthy tenants' verdicts arrive within allowed
// lateness + one evaluation + the idle timeout (+ the router's idle check
// period, a quarter of the timeout, and the pipeline's own delay).
func TestLiveRejectedOnlyPartitionDoesNotHoldTheWatermark(t *testing.T) {
	k, cfg, log, run := startLive(t, liveOpts{suffix: ".rejected"})
	healthy := []string{"acme", "globex"}
	pub := startPublisher(t, k, healthy, 1, 2, 3, 4, 5)

	names := schemas.DefaultAttributeNames()
	start := time.Now()
	produceSync(t, pub.cl, &kgo.Record{Topic: "otlp_spans", Partition: 0,
		Value: schemas.EncodeOTLPProto(nil, []schemas.Span{liveSpan(1<<41, "acme", "gpt-4o", start)}, names)})

	stop := make(chan struct{})
	bad := make(chan int, 1)
	go func() {
		n := 0
		defer func() { bad <- n }()
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for i := uint64(0); ; i++ {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			now := time.Now()
			var v []byte
			switch i % 3 {
			case 0:
				v = []byte{0x0a, 0xff, 0xff, 0xff} // truncated protobuf
			case 1:
				s := liveSpan(1<<42+i, "acme", "gpt-4o", now)
				s.StartUnixNano = s.EndUnixNano + 1 // end before start
				v = schemas.EncodeOTLPProto(nil, []schemas.Span{s}, names)
			case 2:
				s := liveSpan(1<<42+i, "acme", "", now) // no model: not an LLM call
				v = schemas.EncodeOTLPProto(nil, []schemas.Span{s}, names)
			}
			if err := pub.cl.ProduceSync(context.Background(), &kgo.Record{Topic: "otlp_spans", Partition: 0, Value: v}).FirstErr(); err != nil {
				return
			}
			n++
		}
	}()

	// Verdicts for windows ending 5s after the start, and again 10s after
	// it, while the rejected stream goes on.
	for _, after := range []time.Duration{5 * time.Second, 10 * time.Second} {
		end := start.Add(after)
		got := log.waitVerdicts(t, end, after+10*time.Second, healthy...)
		delay := got.Sub(end)
		bound := cfg.Time.AllowedLateness + time.Second + cfg.Time.IdleSourceTimeout*5/4 + 2*time.Second
		t.Logf("verdicts of windows ending %v after the start came %v after the window end (bound %v)", after, delay.Round(10*time.Millisecond), bound)
		if delay > bound {
			t.Errorf("verdicts of windows ending %v after the start came %v after the window end, want within %v", after, delay, bound)
		}
	}
	close(stop)
	n := <-bad
	st := run.p.Source().Stats()
	if n < 100 || st.SkippedNoModel == 0 || st.DeadLettered["malformed"] == 0 || st.DeadLettered["invalid"] == 0 {
		t.Errorf("the rejected stream did not flow: %d records sent, router stats %+v", n, st)
	}
	if ks := run.p.Keyed().Stats(); ks.LateSpans > 0 {
		t.Errorf("%d late spans", ks.LateSpans)
	}
	pub.halt()
	run.stop(t)
}
