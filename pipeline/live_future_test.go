package pipeline_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/ingest"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLiveFutureEventTime feeds, while two tenants' valid traffic flows
// live, a message holding one valid span and one ending 24h ahead, a
// message whose only span ends in year 2262, and a correction 24h ahead.
// The 24h-ahead message goes to every source partition, as a
// producer's partitioner spreads one client's messages. The healthy tenants' verdicts must keep coming (before the fix the
// watermark jumped a day ahead and every later span was late, or the
// engine stepped through billions of empty windows), the valid span of the
// mixed message must count, the future events must be in the DLQ as
// future_event_time, no watermark or checkpoint may run ahead of the wall
// clock, a shutdown must stay bounded, and a restart from the checkpoint
// must resume the verdicts at once.
func TestLiveFutureEventTime(t *testing.T) {
	k, cfg, log, run := startLive(t, liveOpts{suffix: ".future"})
	pub := startPublisher(t, k, []string{"acme", "globex"})
	healthy := []string{"acme", "globex"}
	log.waitVerdicts(t, time.Now(), 30*time.Second, healthy...)

	names := schemas.DefaultAttributeNames()
	inject := time.Now()
	good := liveSpan(1<<40, "initech", "gpt-4o", inject)
	ahead := liveSpan(1<<40+1, "evil", "gpt-4o", inject.Add(24*time.Hour))
	far := liveSpan(1<<40+2, "evil", "gpt-4o", time.Unix(0, math.MaxInt64-int64(time.Hour)))
	corr := schemas.Correction{EventID: "c-future", TimeUnixNano: inject.Add(24 * time.Hour).UnixNano(), Tenant: "acme",
		TraceID: ahead.TraceID, Kind: schemas.CorrectionKind("reject"), SchemaVersion: 1}
	cv, err := schemas.EncodeCorrection(corr)
	if err != nil {
		t.Fatal(err)
	}
	// The client whose clock is a day fast writes to every partition, as
	// a producer's partitioner spreads its messages.
	recs := []*kgo.Record{
		{Topic: "otlp_spans", Partition: 1, Value: schemas.EncodeOTLPProto(nil, []schemas.Span{far}, names)},
		{Topic: "fusebox.corrections", Value: cv},
	}
	for p := int32(0); p < liveSourcePartitions; p++ {
		good.SpanID[7], ahead.SpanID[7] = byte(p), byte(p)
		recs = append(recs, &kgo.Record{Topic: "otlp_spans", Partition: p, Value: schemas.EncodeOTLPProto(nil, []schemas.Span{good, ahead}, names)})
	}
	produceSync(t, pub.cl, recs...)

	// Verdicts of windows ending 3s after the injection: the data of
	// after it is on time and judged.
	back := log.waitVerdicts(t, inject.Add(3*time.Second), 20*time.Second, healthy...)
	t.Logf("healthy verdicts for windows ending 3s after the injection came %v after it", back.Sub(inject).Round(10*time.Millisecond))
	log.waitAnyVerdict(t, inject, 10*time.Second, "initech")
	if n := log.newest("evil", false); n != 0 {
		t.Errorf("the future spans reached a processor: verdict for tenant evil at %d", n)
	}
	checkWatermarks(t, run.p, "while running")
	if st := run.p.Keyed().Stats(); st.LateSpans > 0 {
		t.Errorf("%d late spans: valid traffic was counted late", st.LateSpans)
	}

	want := 2 + liveSourcePartitions
	dlq := k.ReadAll(t, cfg.Topics.DLQ, want, 10*time.Second)
	kinds := map[string]int{}
	partialNamed := 0
	for _, r := range dlq {
		kind := header(r, ingest.HeaderErrorKind)
		kinds[kind]++
		if kind == string(ingest.KindFutureEventTime) && header(r, ingest.HeaderPartial) == "true" {
			if strings.HasPrefix(header(r, ingest.HeaderInvalidSpan), "1 spans[1].end_time: event time") {
				partialNamed++
			}
		}
	}
	if kinds[string(ingest.KindFutureEventTime)] != want || len(dlq) != want {
		t.Errorf("DLQ kinds %v, want %d future_event_time records", kinds, want)
	}
	if partialNamed != liveSourcePartitions {
		t.Errorf("%d partial DLQ records name span 1 as ahead of time, want %d", partialNamed, liveSourcePartitions)
	}
	if got := run.p.Source().Stats().DeadLettered[ingest.KindFutureEventTime]; got != 2 {
		t.Errorf("future_event_time records dead-lettered whole: %d, want 2", got)
	}

	// A shutdown (what SIGTERM does) stays bounded.
	t0 := time.Now()
	run.stop(t)
	if d := time.Since(t0); d > 15*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	t.Logf("shutdown took %v", time.Since(t0).Round(time.Millisecond))

	// The checkpoints hold sane watermarks: a restart judges at once.
	restart := time.Now()
	run2 := startLoggedRun(t, cfg, log)
	got := log.waitVerdicts(t, restart.Add(time.Second), 30*time.Second, healthy...)
	t.Logf("after the restart, verdicts for new windows came %v after it", got.Sub(restart).Round(10*time.Millisecond))
	checkWatermarks(t, run2.p, "after the restart")
	if st := run2.p.Keyed().Stats(); st.LateSpans > 0 {
		t.Errorf("%d late spans after the restart", st.LateSpans)
	}
	pub.halt()
	run2.stop(t)
}

// produceSync writes recs with cl (whose partitioner may be manual).
func produceSync(t *testing.T, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// checkWatermarks fails when a keyed partition's watermark is ahead of the
// wall clock.
func checkWatermarks(t *testing.T, p *pipeline.Pipeline, when string) {
	t.Helper()
	now := time.Now().UnixNano()
	for part, wm := range p.Keyed().Partitions() {
		if wm > now {
			t.Errorf("%s: keyed partition %d watermark %s is ahead of the wall clock", when, part, time.Unix(0, wm).UTC())
		}
	}
}

func header(r *kgo.Record, key string) string {
	v := ""
	for _, h := range r.Headers {
		if h.Key == key {
			v = string(h.Value)
		}
	}
	return v
}
