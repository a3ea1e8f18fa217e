package pipeline_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestKafkaDefaultLimitsKeyedRecords: a team sends OTLP batches of ~3 MB, all
// of one tenant, to a span topic configured to take them (max.message.bytes
// 4 MiB). The keyed topic fusebox creates has the broker's default limits
// (message.max.bytes 1,048,588 on Apache Kafka; the conformance set runs
// this there), so the router must split each tenant's share of a message
// into keyed records that fit: every span reaches the keyed stage, none is
// dead-lettered, and no keyed record exceeds the default limit.
func TestKafkaDefaultLimitsKeyedRecords(t *testing.T) {
	k := testharness.StartBroker(t)
	k.CreateTopic(t, "otlp_spans", 3, testharness.MaxMessageBytes(4<<20))
	cfg := loadConfig(t, k.Brokers, "")

	g, err := traffic.New(traffic.Demo(), time.Unix(1_800_000_000, 0))
	if err != nil {
		t.Fatal(err)
	}
	names := schemas.DefaultAttributeNames()
	var recs []*kgo.Record
	total := 0
	for len(recs) < 3 {
		var spans []schemas.Span
		for len(spans) < 5_000 {
			b := g.Next(time.Second)
			for _, s := range b.Spans {
				s.Key.Tenant = "acme" // one tenant: one keyed partition's share
				spans = append(spans, s)
			}
		}
		v := schemas.EncodeOTLPProto(nil, spans, names)
		if len(v) < 2<<20 || len(v) > 4<<20 {
			t.Fatalf("test message of %d bytes, want 2-4 MiB", len(v))
		}
		recs = append(recs, &kgo.Record{Topic: "otlp_spans", Value: v, Timestamp: g.Now()})
		total += len(spans)
	}
	cl := k.Client(t, kgo.ProducerBatchMaxBytes(8<<20), kgo.MaxBufferedBytes(64<<20))
	ctx, cancelProduce := context.WithTimeout(context.Background(), time.Minute)
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("publish 3 MB messages: %v", err)
	}
	cancelProduce()

	run := startRunWith(t, pipeline.Options{Config: cfg, Logger: testLogger(t)})
	p := run.p
	testharness.Eventually(t, 2*time.Minute, "every span at the keyed stage", func() bool { return p.Keyed().Stats().Spans >= int64(total) })
	st := p.Keyed().Stats()
	run.stop(t)
	if st.Spans != int64(total) {
		t.Errorf("keyed stage saw %d spans, want %d", st.Spans, total)
	}
	keyed := k.ReadToEnd(t, cfg.Topics.Keyed)
	largest, parts, bytes := 0, 0, 0
	for _, r := range keyed {
		largest = max(largest, len(r.Value))
		if len(r.Value) > 100<<10 { // a share of a big message, not a heartbeat
			parts++
			bytes += len(r.Value)
		}
	}
	const kafkaDefault = 1_048_588 // message.max.bytes, Apache Kafka's default
	if largest > kafkaDefault {
		t.Errorf("largest keyed record %d bytes, above Kafka's default %d", largest, kafkaDefault)
	}
	// Each message's share is larger than one keyed record may be (900
	// KiB): it must have been split.
	if bytes/3 <= 900<<10 || parts < 2*3 {
		t.Errorf("%d keyed records over 100 KiB, %d bytes, for 3 messages: each share should need at least two", parts, bytes)
	}
	if dead := k.ReadAll(t, cfg.Topics.DLQ, 1, 2*time.Second); len(dead) != 0 {
		t.Errorf("%d records dead-lettered, want none", len(dead))
	}
	t.Logf("%s broker: %d spans in 3 messages, %d keyed records (largest %d bytes)", testharness.BrokerKind(t), total, len(keyed), largest)
}
