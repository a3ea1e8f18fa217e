package kafkasink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks"
)

var t0 = time.Date(2025, 3, 4, 0, 0, 0, 0, time.UTC)

func makeVerdict(i int) schemas.Verdict {
	key := schemas.Key{Tenant: fmt.Sprintf("t%d", i%3), Service: "chat/v2", Model: fmt.Sprintf("m%d", i%2), Variant: "canary"}
	end := t0.Add(time.Duration(i) * time.Minute)
	v := schemas.Verdict{
		Processor: []string{"tail", "drift"}[i%2], SLO: "latency", Metric: "duration_ms", Key: key,
		WindowStartUnixNano: end.Add(-5 * time.Minute).UnixNano(), WindowEndUnixNano: end.UnixNano(),
		Value: 100 + float64(i)/3, Threshold: 150, Lower: 90, Upper: 120, IntervalLevel: 0.95,
		Status: schemas.StatusBreach, Method: "gpd_mle_profile", N: int64(1000 + i),
		Details:       []schemas.Detail{{Name: "xi", Value: 0.1}, {Name: "sigma", Value: 12.5}},
		ConfigVersion: "v1",
	}
	v.ID = schemas.VerdictID(v.Processor, v.SLO, v.Metric, v.Key, v.WindowEndUnixNano, v.ConfigVersion)
	return v
}

func makeCommand(target schemas.Key, version uint64, reasons ...schemas.Verdict) schemas.FuseCommand {
	c := schemas.FuseCommand{Target: target, Action: schemas.ActionTrip, Level: 2, State: schemas.StateOpen, Version: version,
		IssuedAtUnixNano: t0.UnixNano(), ExpiresAtUnixNano: t0.Add(time.Hour).UnixNano(), KeyID: "k1", Signature: "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"}
	for _, v := range reasons {
		c.Reasons = append(c.Reasons, schemas.Reason{VerdictID: v.ID, Text: "breach"})
	}
	return c
}

func testConfig(k *testharness.Kafka) Config {
	cfg := DefaultConfig()
	cfg.Brokers = k.Brokers
	cfg.RetryBackoffMin = 20 * time.Millisecond
	cfg.RetryBackoffMax = 200 * time.Millisecond
	cfg.AdminTimeout = 10 * time.Second
	return cfg
}

// newSink starts a sink; a short metadata age makes franz-go retry refused
// partitions within tens of milliseconds instead of its default 5 s.
func newSink(t *testing.T, cfg Config, opts ...kgo.Opt) *Sink {
	t.Helper()
	s, err := New(context.Background(), cfg, append([]kgo.Opt{kgo.MetadataMinAge(20 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

func flush(t *testing.T, s *Sink) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

func TestRecordsLandWithKeysAndStableValues(t *testing.T) {
	k := testharness.StartKafka(t)
	s := newSink(t, testConfig(k))
	var vs []schemas.Verdict
	for i := 0; i < 200; i++ {
		vs = append(vs, makeVerdict(i))
	}
	cmds := []schemas.FuseCommand{makeCommand(vs[0].Key, 1, vs[0]), makeCommand(vs[1].Key, 1, vs[1]), makeCommand(vs[0].Key, 2, vs[2])}
	if err := s.Write(context.Background(), schemas.Output{Verdicts: vs, Commands: cmds}); err != nil {
		t.Fatal(err)
	}
	flush(t, s)

	got := k.ReadAll(t, DefaultVerdictTopic, len(vs), 10*time.Second)
	if len(got) != len(vs) {
		t.Fatalf("%d verdict records, want %d", len(got), len(vs))
	}
	byID := map[string]schemas.Verdict{}
	for _, v := range vs {
		byID[v.ID] = v
	}
	for _, r := range got {
		v, err := sinks.UnmarshalVerdictJSON(r.Value)
		if err != nil {
			t.Fatalf("decode %s: %v", r.Value, err)
		}
		want, ok := byID[v.ID]
		if !ok {
			t.Fatalf("unknown verdict id %s", v.ID)
		}
		delete(byID, v.ID)
		if string(r.Key) != want.Processor+"/"+want.Key.String() {
			t.Errorf("key %q, want %q", r.Key, want.Processor+"/"+want.Key.String())
		}
		wantValue, _ := sinks.MarshalVerdictJSON(nil, &want)
		if string(r.Value) != string(wantValue) {
			t.Errorf("value %s, want %s", r.Value, wantValue)
		}
		if len(r.Headers) != 1 || r.Headers[0].Key != SchemaHeader || string(r.Headers[0].Value) != sinks.VerdictJSONVersion {
			t.Errorf("headers %v", r.Headers)
		}
	}
	if len(byID) != 0 {
		t.Errorf("%d verdicts missing", len(byID))
	}

	fuse := k.ReadAll(t, DefaultFuseTopic, len(cmds), 10*time.Second)
	if len(fuse) != len(cmds) {
		t.Fatalf("%d fuse records, want %d", len(fuse), len(cmds))
	}
	// Same target → same partition, versions in order.
	byTarget := map[string][]uint64{}
	partition := map[string]int32{}
	for _, r := range fuse {
		c, err := schemas.DecodeFuseCommand(r.Value)
		if err != nil {
			t.Fatalf("decode fuse record %s: %v", r.Value, err)
		}
		i := slices.IndexFunc(cmds, func(w schemas.FuseCommand) bool { return w.Target == c.Target && w.Version == c.Version })
		if i < 0 || string(r.Key) != c.Target.String() {
			t.Fatalf("fuse record key %q for target %s version %d: not written", r.Key, c.Target.String(), c.Version)
		}
		want, _ := json.Marshal(cmds[i])
		if string(r.Value) != string(want) {
			t.Errorf("fuse value %s, want %s", r.Value, want)
		}
		byTarget[string(r.Key)] = append(byTarget[string(r.Key)], c.Version)
		if p, ok := partition[string(r.Key)]; ok && p != r.Partition {
			t.Errorf("target %s in partitions %d and %d", r.Key, p, r.Partition)
		}
		partition[string(r.Key)] = r.Partition
	}
	if v := byTarget[vs[0].Key.String()]; !slices.Equal(v, []uint64{1, 2}) {
		t.Errorf("versions of %s in partition order: %v, want [1 2]", vs[0].Key.String(), v)
	}
	if m := metric(t, s, "fusebox_sink_records_total", DefaultVerdictTopic); m != float64(len(vs)) {
		t.Errorf("verdict records metric %v, want %d", m, len(vs))
	}
	if m := metric(t, s, "fusebox_sink_records_total", DefaultFuseTopic); m != float64(len(cmds)) {
		t.Errorf("fuse records metric %v, want %d", m, len(cmds))
	}
}

// metric returns the value of the metric with the given name and topic
// label (any labels when topic is ""); a missing metric fails the test.
func metric(t *testing.T, s *Sink, name, topic string) float64 {
	t.Helper()
	for _, m := range s.Metrics() {
		if m.Name != name {
			continue
		}
		for _, l := range m.Labels {
			if (l.Name == "topic" && l.Value == topic) || topic == "" {
				return m.Value
			}
		}
	}
	t.Fatalf("metric %s{topic=%q} not reported", name, topic)
	return math.NaN()
}

// verdictIDs decodes the verdict records and returns their ids, sorted.
func verdictIDs(t *testing.T, recs []*kgo.Record) []string {
	t.Helper()
	ids := make([]string, 0, len(recs))
	for _, r := range recs {
		v, err := sinks.UnmarshalVerdictJSON(r.Value)
		if err != nil {
			t.Fatalf("decode %s: %v", r.Value, err)
		}
		ids = append(ids, v.ID)
	}
	slices.Sort(ids)
	return ids
}

// idsOf returns the ids of vs, sorted.
func idsOf(vs ...schemas.Verdict) []string {
	ids := make([]string, 0, len(vs))
	for _, v := range vs {
		ids = append(ids, v.ID)
	}
	slices.Sort(ids)
	return ids
}

func TestTopicsAreCreatedAndFuseIsCompacted(t *testing.T) {
	k := testharness.StartKafka(t)
	cfg := testConfig(k)
	cfg.VerdictTopic, cfg.FuseTopic = "team.verdicts", "team.fuse"
	cfg.VerdictPartitions, cfg.FusePartitions = 4, 2
	cfg.FuseTopicConfigs = map[string]string{"max.message.bytes": "2097152"}
	newSink(t, cfg)

	adm := kadm.NewClient(k.Client(t))
	ctx := context.Background()
	details, err := adm.ListTopics(ctx, "team.verdicts", "team.fuse")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(details["team.verdicts"].Partitions); n != 4 {
		t.Errorf("verdict topic partitions %d, want 4", n)
	}
	if n := len(details["team.fuse"].Partitions); n != 2 {
		t.Errorf("fuse topic partitions %d, want 2", n)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "team.fuse")
	if err != nil {
		t.Fatal(err)
	}
	configs := map[string]string{}
	for _, c := range rcs[0].Configs {
		configs[c.Key] = c.MaybeValue()
	}
	if configs["cleanup.policy"] != "compact" || configs["max.message.bytes"] != "2097152" {
		t.Errorf("fuse topic configs %v", configs)
	}

	// A second sink on the existing topics starts fine; compaction keeps
	// the newest command per target.
	s := newSink(t, cfg)
	v := makeVerdict(1)
	other := schemas.Key{Tenant: "t9", Service: "*", Model: "*", Variant: "*"}
	for version := uint64(1); version <= 3; version++ {
		out := schemas.Output{Verdicts: []schemas.Verdict{v}, Commands: []schemas.FuseCommand{makeCommand(v.Key, version, v), makeCommand(other, version, v)}}
		if err := s.Write(ctx, out); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, s)
	k.Cluster.Compact()
	kept := map[string][]uint64{}
	for _, r := range k.ReadAll(t, "team.fuse", 6, 2*time.Second) {
		c, err := schemas.DecodeFuseCommand(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		kept[string(r.Key)] = append(kept[string(r.Key)], c.Version)
	}
	// kfake, like Kafka, never compacts the active (last) batch of a
	// partition, so version 2 may survive beside 3; version 1 must be gone.
	for _, target := range []schemas.Key{v.Key, other} {
		got := kept[target.String()]
		if len(got) == 0 || got[len(got)-1] != 3 || slices.Contains(got, 1) {
			t.Errorf("after compaction target %s has versions %v, want 1 removed and 3 last", target.String(), got)
		}
	}
}

func TestExistingUncompactedFuseTopicIsRefused(t *testing.T) {
	k := testharness.StartKafka(t)
	k.CreateTopic(t, DefaultFuseTopic, 1, nil)
	_, err := New(context.Background(), testConfig(k))
	if !errors.Is(err, ErrFuseTopicNotCompacted) {
		t.Fatalf("New with a delete-policy fuse topic: %v, want ErrFuseTopicNotCompacted", err)
	}
}

// produceGate fails produce requests to the verdict topic while closed, and
// records whether a fuse record was produced while a verdict was still
// unacknowledged by the broker.
type produceGate struct {
	cluster   *kfake.Cluster
	verdictID [16]byte
	verdict   string
	fuseID    [16]byte
	fuse      string

	closed           atomic.Bool
	rejected         atomic.Int64
	mu               sync.Mutex
	fuseWhileBlocked int
}

func newProduceGate(t *testing.T, k *testharness.Kafka, cfg Config) *produceGate {
	t.Helper()
	details, err := kadm.NewClient(k.Client(t)).ListTopics(context.Background(), cfg.VerdictTopic, cfg.FuseTopic)
	if err != nil {
		t.Fatal(err)
	}
	g := &produceGate{cluster: k.Cluster, verdict: cfg.VerdictTopic, fuse: cfg.FuseTopic,
		verdictID: details[cfg.VerdictTopic].ID, fuseID: details[cfg.FuseTopic].ID}
	k.Cluster.ControlKey(kmsg.Produce.Int16(), g.control)
	return g
}

func (g *produceGate) control(req kmsg.Request) (kmsg.Response, error, bool) {
	g.cluster.KeepControl()
	preq := req.(*kmsg.ProduceRequest)
	hasVerdict, hasFuse := false, false
	for _, t := range preq.Topics {
		hasVerdict = hasVerdict || t.Topic == g.verdict || (t.Topic == "" && t.TopicID == g.verdictID)
		hasFuse = hasFuse || t.Topic == g.fuse || (t.Topic == "" && t.TopicID == g.fuseID)
	}
	if !g.closed.Load() {
		return nil, nil, false
	}
	if hasFuse {
		g.mu.Lock()
		g.fuseWhileBlocked++
		g.mu.Unlock()
	}
	if !hasVerdict {
		return nil, nil, false
	}
	// Refuse the whole request with a retriable error: nothing is written.
	g.rejected.Add(1)
	resp := preq.ResponseKind().(*kmsg.ProduceResponse)
	for _, t := range preq.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = kerr.NotEnoughReplicas.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil, true
}

// TestCommandNeverVisibleBeforeItsVerdicts holds the verdict produces back
// at the broker; the command written with them must not reach the fuse
// topic until every verdict before it is acknowledged.
func TestCommandNeverVisibleBeforeItsVerdicts(t *testing.T) {
	k := testharness.StartKafka(t)
	cfg := testConfig(k)
	s := newSink(t, cfg)
	gate := newProduceGate(t, k, cfg)

	// A first round with the gate open proves the path works.
	v0 := makeVerdict(0)
	if err := s.Write(context.Background(), schemas.Output{Verdicts: []schemas.Verdict{v0}, Commands: []schemas.FuseCommand{makeCommand(v0.Key, 1, v0)}}); err != nil {
		t.Fatal(err)
	}
	flush(t, s)

	gate.closed.Store(true)
	var vs []schemas.Verdict
	for i := 1; i <= 50; i++ {
		vs = append(vs, makeVerdict(i))
	}
	cmd := makeCommand(vs[0].Key, 2, vs...)
	if err := s.Write(context.Background(), schemas.Output{Verdicts: vs, Commands: []schemas.FuseCommand{cmd}}); err != nil {
		t.Fatal(err)
	}
	// Later verdicts without commands do not let the command through either.
	if err := s.Write(context.Background(), schemas.Output{Verdicts: []schemas.Verdict{makeVerdict(99)}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	err := s.Flush(ctx)
	cancel()
	var fe *sinks.FlushError
	if !errors.As(err, &fe) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush with verdicts held back: %v, want a FlushError", err)
	}
	if gate.rejected.Load() == 0 {
		t.Fatal("the gate rejected no produce request: the test did not hold anything back")
	}
	if fuse := k.ReadAll(t, DefaultFuseTopic, 2, time.Second); len(fuse) != 1 || fuseVersion(t, fuse[0]) != 1 {
		t.Fatalf("%d fuse records while the verdicts are unacknowledged, want only the first round's 1 (version 1)", len(fuse))
	}

	gate.closed.Store(false)
	flush(t, s)
	gate.mu.Lock()
	bad := gate.fuseWhileBlocked
	gate.mu.Unlock()
	if bad != 0 {
		t.Errorf("%d produce requests carried fuse records while verdicts were held back", bad)
	}
	verdicts := k.ReadAll(t, DefaultVerdictTopic, 52, 10*time.Second)
	fuse := k.ReadAll(t, DefaultFuseTopic, 2, 10*time.Second)
	if len(verdicts) != 52 || len(fuse) != 2 {
		t.Fatalf("after the release: %d verdicts (want 52), %d commands (want 2)", len(verdicts), len(fuse))
	}
	if got, want := verdictIDs(t, verdicts), idsOf(append([]schemas.Verdict{v0, makeVerdict(99)}, vs...)...); !slices.Equal(got, want) {
		t.Errorf("verdict ids after the release:\n %v\nwant\n %v", got, want)
	}
	// The two commands target different keys, so they may be read in either
	// order.
	if got := []uint64{fuseVersion(t, fuse[0]), fuseVersion(t, fuse[1])}; !slices.Equal(slices.Sorted(slices.Values(got)), []uint64{1, 2}) {
		t.Errorf("fuse record versions %v, want 1 and 2", got)
	}
	t.Logf("the gate refused %d produce requests while holding the verdicts back", gate.rejected.Load())
}

// TestFailedRecordsAreProducedAgain makes franz-go give up on verdict
// records (RecordRetries(1) while the broker refuses them); the sink must
// produce them again after a backoff until they land, and count the
// failures.
func TestFailedRecordsAreProducedAgain(t *testing.T) {
	k := testharness.StartKafka(t)
	cfg := testConfig(k)
	s := newSink(t, cfg, kgo.RecordRetries(1))
	gate := newProduceGate(t, k, cfg)
	gate.closed.Store(true)
	var vs []schemas.Verdict
	for i := 0; i < 100; i++ {
		vs = append(vs, makeVerdict(i))
	}
	if err := s.Write(context.Background(), schemas.Output{Verdicts: vs}); err != nil {
		t.Fatal(err)
	}
	testharness.Eventually(t, 10*time.Second, "a record given up and produced again", func() bool {
		return metric(t, s, "fusebox_sink_retries_total", DefaultVerdictTopic) >= 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err := s.Flush(ctx)
	cancel()
	var fe *sinks.FlushError
	if !errors.As(err, &fe) || fe.LastErr == nil || !errors.Is(fe.LastErr, kerr.NotEnoughReplicas) {
		t.Fatalf("Flush while failing: %v, want a FlushError with the delivery error", err)
	}
	gate.closed.Store(false)
	flush(t, s)
	// Produced again after a give-up: duplicates are allowed (at least
	// once), but the distinct ids must be exactly those written.
	got := slices.Compact(verdictIDs(t, k.ReadAll(t, DefaultVerdictTopic, len(vs), 10*time.Second)))
	if want := idsOf(vs...); !slices.Equal(got, want) {
		t.Errorf("%d distinct verdicts on the topic, want exactly the %d written:\n %v\nwant\n %v", len(got), len(want), got, want)
	}
	if e := metric(t, s, "fusebox_sink_errors_total", DefaultVerdictTopic); !(e >= 1) {
		t.Errorf("errors metric %v, want at least 1", e)
	}
}

// TestWriteBlocksWhenPendingIsFull: with the broker refusing verdicts,
// Write stops at MaxPendingRecords and returns when its context ends.
func TestWriteBlocksWhenPendingIsFull(t *testing.T) {
	k := testharness.StartKafka(t)
	cfg := testConfig(k)
	cfg.MaxPendingRecords = 100
	s := newSink(t, cfg)
	gate := newProduceGate(t, k, cfg)
	gate.closed.Store(true)
	var vs []schemas.Verdict
	for i := 0; i < 250; i++ {
		vs = append(vs, makeVerdict(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	err := s.Write(ctx, schemas.Output{Verdicts: vs})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Write of 250 with 100 slots and a refusing broker: %v, want DeadlineExceeded", err)
	}
	if p := metric(t, s, "fusebox_sink_pending_records", ""); p != 100 {
		t.Errorf("pending %v, want 100", p)
	}
	gate.closed.Store(false)
	// The rest goes through once the broker accepts again.
	if err := s.Write(context.Background(), schemas.Output{Verdicts: vs[100:]}); err != nil {
		t.Fatal(err)
	}
	flush(t, s)
	if got, want := verdictIDs(t, k.ReadAll(t, DefaultVerdictTopic, 250, 10*time.Second)), idsOf(vs...); !slices.Equal(got, want) {
		t.Errorf("%d records, want the 250 written exactly once:\n %v\nwant\n %v", len(got), got, want)
	}
}

func TestWriteRejectsInvalidVerdictAndClose(t *testing.T) {
	k := testharness.StartKafka(t)
	s, err := New(context.Background(), testConfig(k))
	if err != nil {
		t.Fatal(err)
	}
	bad := makeVerdict(1)
	bad.Value = math.NaN()
	if err := s.Write(context.Background(), schemas.Output{Verdicts: []schemas.Verdict{makeVerdict(0), bad}}); !errors.Is(err, schemas.ErrInvalid) {
		t.Errorf("Write with NaN: %v, want ErrInvalid", err)
	}
	if err := s.Write(context.Background(), schemas.Output{Verdicts: []schemas.Verdict{makeVerdict(2)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Write(context.Background(), schemas.Output{}); !errors.Is(err, sinks.ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
	if got, want := verdictIDs(t, k.ReadAll(t, DefaultVerdictTopic, 1, 5*time.Second)), idsOf(makeVerdict(2)); !slices.Equal(got, want) {
		t.Errorf("verdict ids after Close %v, want only the valid write's %v", got, want)
	}
}

// fuseVersion decodes a fuse record and returns its command's version.
func fuseVersion(t *testing.T, r *kgo.Record) uint64 {
	t.Helper()
	c, err := schemas.DecodeFuseCommand(r.Value)
	if err != nil {
		t.Fatalf("decode fuse record %s: %v", r.Value, err)
	}
	return c.Version
}

func TestConfigValidate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FuseTopic = cfg.VerdictTopic
	cfg.MaxPendingRecords = 0
	cfg.FuseTopicConfigs = map[string]string{"cleanup.policy": "delete"}
	err := cfg.Validate()
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *ConfigError
		if errors.As(e, &ce) {
			fields = append(fields, ce.Field)
		}
	}
	for _, f := range []string{"brokers", "fuse_topic", "max_pending_records", "fuse_topic_configs[cleanup.policy]"} {
		if !slices.Contains(fields, f) {
			t.Errorf("Validate did not name %s; got %v", f, fields)
		}
	}
	if _, err := New(context.Background(), Config{Brokers: []string{"127.0.0.1:1"}}); err == nil {
		t.Error("New with a zero Config succeeded")
	}
}

func TestIdempotenceCannotBeDisabled(t *testing.T) {
	k := testharness.StartKafka(t)
	var ce *ConfigError
	if _, err := New(context.Background(), testConfig(k), kgo.DisableIdempotentWrite()); !errors.As(err, &ce) {
		t.Errorf("New with DisableIdempotentWrite: %v, want a ConfigError", err)
	}
}
