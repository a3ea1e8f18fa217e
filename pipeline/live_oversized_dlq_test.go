package pipeline_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/ingest"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLiveOversizedDeadLettersKeepVerdicts: while two tenants' valid
// traffic flows live, a producer whose source topic takes 8 MiB records
// writes, to every source partition, undecodable records too large for the
// DLQ topic's default limit in each of their parts: 2 MB of its own
// headers, a 2 MB header named fusebox.error (a producer's, not fusebox's),
// and a 2 MB value. The healthy tenants' verdicts must keep coming; every
// bad record must reach the DLQ, each smaller by its largest part and
// saying so, without a retry and without one given up; and the source
// offsets must be committed past them (no partition stalled behind a write
// that cannot succeed).
func TestLiveOversizedDeadLettersKeepVerdicts(t *testing.T) {
	k := testharness.StartKafka(t)
	k.CreateTopic(t, "otlp_spans", liveSourcePartitions, testharness.MaxMessageBytes(8<<20))
	cfg := liveConfig(t, liveOpts{brokers: k.Brokers, suffix: ".oversized"})
	log := &verdictLog{}
	run := startLoggedRun(t, cfg, log)
	pub := startPublisher(t, k, []string{"acme", "globex"})
	healthy := []string{"acme", "globex"}
	log.waitVerdicts(t, time.Now(), 30*time.Second, healthy...)

	rng := rand.New(rand.NewPCG(11, 12))
	noise := func(n int) []byte { // incompressible
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	big := k.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(8<<20), kgo.MaxBufferedBytes(64<<20))
	inject := time.Now()
	var recs []*kgo.Record
	for p := int32(0); p < liveSourcePartitions; p++ {
		recs = append(recs,
			&kgo.Record{Topic: "otlp_spans", Partition: p, Value: []byte("not otlp: headers"), Headers: []kgo.RecordHeader{
				{Key: "team.a", Value: noise(700_000)}, {Key: "team.b", Value: noise(700_000)}, {Key: "team.c", Value: noise(700_000)}}},
			&kgo.Record{Topic: "otlp_spans", Partition: p, Value: []byte("not otlp: impostor"), Headers: []kgo.RecordHeader{
				{Key: ingest.HeaderError, Value: noise(2_000_000)}}},
			&kgo.Record{Topic: "otlp_spans", Partition: p, Value: append([]byte("not otlp: value "), noise(2_000_000)...),
				Headers: []kgo.RecordHeader{{Key: "team.trace", Value: []byte("t-" + strconv.Itoa(int(p)))}}},
		)
	}
	for _, r := range recs {
		produceSync(t, big, r) // one by one: each is under the topic's 8 MiB, all together are not
	}
	produced := time.Since(inject)

	back := log.waitVerdicts(t, inject.Add(3*time.Second), 30*time.Second, healthy...)
	t.Logf("%d oversized records produced in %v; healthy verdicts for windows ending 3s after the first came %v after it",
		len(recs), produced.Round(time.Millisecond), back.Sub(inject).Round(10*time.Millisecond))

	want := len(recs)
	dlq := k.ReadAll(t, cfg.Topics.DLQ, want, 30*time.Second)
	if len(dlq) != want {
		t.Fatalf("DLQ holds %d records, want %d", len(dlq), want)
	}
	var headersGone, impostorGone, valueGone int
	for _, d := range dlq {
		if header(d, ingest.HeaderErrorKind) != string(ingest.KindMalformed) || header(d, ingest.HeaderSourceTopic) != "otlp_spans" {
			t.Errorf("dead letter: kind %q from %q, want malformed from otlp_spans", header(d, ingest.HeaderErrorKind), header(d, ingest.HeaderSourceTopic))
		}
		switch {
		case string(d.Value) == "not otlp: headers" && header(d, ingest.HeaderHeadersOmitted) == "3":
			headersGone++
		case string(d.Value) == "not otlp: impostor" && header(d, ingest.HeaderHeadersOmitted) == "1" && len(header(d, ingest.HeaderError)) < 5000:
			impostorGone++
		case len(d.Value) == 0 && header(d, ingest.HeaderValueOmitted) == "2000016" && header(d, "team.trace") != "":
			valueGone++
		default:
			t.Errorf("unexpected dead letter: value %.30q (%d bytes), headers_omitted %q, value_omitted %q",
				d.Value, len(d.Value), header(d, ingest.HeaderHeadersOmitted), header(d, ingest.HeaderValueOmitted))
		}
	}
	if headersGone != liveSourcePartitions || impostorGone != liveSourcePartitions || valueGone != liveSourcePartitions {
		t.Errorf("dead letters without their headers %d, without the impostor header %d, without their value %d; want %d each",
			headersGone, impostorGone, valueGone, liveSourcePartitions)
	}
	st := run.p.Source().Stats()
	if st.DLQRetries != 0 || st.DLQUnwritable != 0 || st.DLQOmitted[ingest.OmittedHeaders] != int64(2*liveSourcePartitions) || st.DLQOmitted[ingest.OmittedValue] != int64(liveSourcePartitions) {
		t.Errorf("DLQ stats: retries %d, unwritable %d, omitted %v; want 0, 0, headers %d and value %d",
			st.DLQRetries, st.DLQUnwritable, st.DLQOmitted, 2*liveSourcePartitions, liveSourcePartitions)
	}
	// Still judging after the dead letters are durable.
	again := time.Now()
	log.waitVerdicts(t, again.Add(2*time.Second), 20*time.Second, healthy...)
	if st := run.p.Keyed().Stats(); st.LateSpans > 0 {
		t.Errorf("%d late spans: the valid traffic was held back behind the dead letters", st.LateSpans)
	}
	// Every source partition's offset is committed to its end once the
	// publisher stops: no partition waits on a dead letter.
	pub.halt()
	adm := kadm.NewClient(k.Client(t))
	testharness.Eventually(t, 30*time.Second, "source offsets committed to the end of otlp_spans", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ends, err := adm.ListEndOffsets(ctx, "otlp_spans")
		if err != nil {
			return false
		}
		got, err := adm.FetchOffsets(ctx, cfg.Kafka.Group+".router")
		if err != nil {
			return false
		}
		behind := 0
		ends.Each(func(o kadm.ListedOffset) {
			if c, ok := got.Lookup(o.Topic, o.Partition); !ok || c.At != o.Offset {
				behind++
			}
		})
		return behind == 0
	})
	run.stop(t)
}
