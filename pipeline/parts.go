package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/engine/statestore"
	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/ingest"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/sinks/clickhousesink"
	"github.com/fusebox-dev/fusebox/sinks/jsonlsink"
	"github.com/fusebox-dev/fusebox/sinks/kafkasink"
)

// Consumer is a consumer group member feeding one stage (*ingest.Consumer).
type Consumer interface {
	// Run consumes until ctx ends or a handler fails (ingest.Consumer.Run).
	Run(ctx context.Context) error
	// Stats are its counters, for /metrics.
	Stats() ingest.Stats
}

// Parts are what Assemble builds the two stages on, as interfaces where
// the stages allow: New opens them from the SLO file; other assemblies
// (tests, another deployment) can bring their own.
type Parts struct {
	// Sinks receive every Output, in this order. Those implementing
	// sinks.MetricsSource are counted in /metrics.
	Sinks []engine.Sink
	// Store keeps one checkpoint per keyed partition.
	Store engine.StateStore
	// StateForeign, when set, counts the checkpoint records of other
	// deployments the store skipped, for /metrics (New's:
	// statestore.Store.Foreign). Nil: counted as 0.
	StateForeign func() int64
	// StateSizes, when set, gives the newest checkpoint's size in bytes
	// per keyed partition, for /metrics (New's: statestore.Store.Sizes).
	// Nil: no fusebox_checkpoint_bytes.
	StateSizes func() map[int32]int
	// Signer signs every fuse command; nil publishes them unsigned.
	Signer engine.Signer
	// Producer is the router's client for the keyed topic; it must use
	// kgo.ManualPartitioner (the router picks the partition).
	Producer *kgo.Client
	// NewConsumer builds the member of one stage's consumer group from the
	// configuration Assemble prepares (group, topics, decoders, handlers,
	// bounds; Brokers from the SLO file). New's adds the Kafka client
	// options (TLS, SASL) and calls ingest.NewFromConfig.
	NewConsumer func(cfg ingest.Config) (Consumer, error)
	// Health names the sinks whose failures /readyz reports and the log
	// tells (New's: "clickhouse", and "extra-N" for the Nth extra sink
	// that reports its health). Nil: every sink of Sinks implementing
	// HealthReporter, named "sink-N".
	Health map[string]HealthReporter
	// Kafka, when set, watches the brokers leading the partitions fusebox
	// reads and writes, for /readyz and the log (New's: every topic of
	// the SLO file; see KafkaWatch). Nil: not watched.
	Kafka *KafkaWatch
	// Leave, when set, is called at a clean shutdown, after both stages
	// stopped, with their groups (New's: a static member leaves them).
	Leave func(groups ...string)
	// Close, when set, releases what the parts hold besides the sinks
	// (New's: its Kafka clients). The pipeline calls it once, after the
	// sinks are closed.
	Close func()
}

// opened are the concrete sinks open made, for the Pipeline's fields.
type opened struct {
	kafka      *kafkasink.Sink
	clickhouse *clickhousesink.Sink
	jsonl      *jsonlsink.Sink
	guard      *fuse.Guard // beside the Kafka sink
}

// open makes New's parts from the SLO file: the Kafka clients (TLS and
// SASL from the kafka section), the topics fusebox needs (created when
// missing), the configured sinks (ClickHouse migrated first), the state
// store on the state topic, the fuse guard beside the Kafka sink, and
// consumers through ingest (static group members when kafka.instance_id
// is set).
func open(ctx context.Context, o Options) (_ Parts, _ opened, err error) {
	f := o.Config
	srcParts := o.SourcePartitions
	if srcParts <= 0 {
		srcParts = 6
	}
	var (
		parts   Parts
		op      opened
		clients []*kgo.Client
	)
	closeClients := func() {
		for _, c := range clients {
			c.Close()
		}
	}
	defer func() {
		if err != nil {
			for _, s := range parts.Sinks {
				s.Close(context.Background())
			}
			closeClients()
		}
	}()
	kopt, err := KafkaOpts(f.Kafka)
	if err != nil {
		return Parts{}, op, err
	}
	kopt = append(kopt, o.KgoOpts...)
	sasl := f.Kafka.SASL.Mechanism != ""
	instanceID, err := InstanceID(f.Kafka.InstanceID)
	if err != nil {
		return Parts{}, op, err
	}
	// The group members of both stages: static (same id in each group)
	// when an instance id is set.
	groupOpts := slices.Clone(kopt)
	if instanceID != "" {
		groupOpts = append(groupOpts, kgo.InstanceID(instanceID))
	}
	// Fail on the SLOs before connecting anywhere.
	if _, err := config.WorkerConfig(f); err != nil {
		return Parts{}, op, err
	}

	admin, err := kgo.NewClient(kopt...)
	if err != nil {
		return Parts{}, op, err
	}
	clients = append(clients, admin)
	compact := map[string]*string{"cleanup.policy": strp("compact")}
	specs := []topicSpec{
		{name: f.Topics.Keyed, partitions: f.Topics.KeyedPartitions, configs: createdTopicConfigs(f.Topics, nil)},
		{name: f.Topics.State, partitions: f.Topics.KeyedPartitions, configs: createdTopicConfigs(f.Topics, compact)},
		{name: f.Topics.DLQ, partitions: 3, configs: createdTopicConfigs(f.Topics, nil)},
	}
	for _, t := range slices.Concat(f.Topics.Spans, f.Topics.Corrections, LogTopics(f)) {
		specs = append(specs, topicSpec{name: t, partitions: srcParts, configs: createdTopicConfigs(f.Topics, nil)})
	}
	if f.Incidents.Enabled {
		specs = append(specs, topicSpec{name: f.Topics.Summaries, partitions: f.Topics.KeyedPartitions, configs: createdTopicConfigs(f.Topics, nil)})
	}
	counts, err := ensureTopics(ctx, kadm.NewClient(admin), sasl, f.Topics.ReplicationFactor, specs)
	if err != nil {
		return Parts{}, op, err
	}
	if counts[f.Topics.State] != counts[f.Topics.Keyed] {
		return Parts{}, op, fmt.Errorf("topics.state %s has %d partitions but topics.keyed %s has %d: they must match (one checkpoint partition per keyed partition)",
			f.Topics.State, counts[f.Topics.State], f.Topics.Keyed, counts[f.Topics.Keyed])
	}

	if f.Incidents.Enabled && counts[f.Topics.Keyed] != f.Topics.KeyedPartitions {
		// The incident stage decides a boundary once every keyed
		// partition reached it: it must know how many there are.
		return Parts{}, op, fmt.Errorf("incidents.enabled: topics.keyed %s has %d partitions but topics.keyed_partitions says %d: set it to the topic's count",
			f.Topics.Keyed, counts[f.Topics.Keyed], f.Topics.KeyedPartitions)
	}
	if f.Incidents.Enabled && counts[f.Topics.Summaries] != f.Topics.KeyedPartitions {
		// The summaries sink writes partition FNV-1a(SLO) mod keyed_partitions.
		return Parts{}, op, fmt.Errorf("incidents.enabled: topics.summaries %s has %d partitions, it needs topics.keyed_partitions (%d)",
			f.Topics.Summaries, counts[f.Topics.Summaries], f.Topics.KeyedPartitions)
	}
	if op, err = openSinks(ctx, o, kopt, &parts); err != nil {
		return Parts{}, op, err
	}
	own := []string{f.Topics.Keyed, f.Topics.State, f.Topics.DLQ}
	if f.Sinks.Kafka.Enabled {
		own = append(own, f.Topics.Verdicts, f.Topics.Fuse)
	}
	if f.Incidents.Enabled {
		own = append(own, f.Topics.Summaries)
		if f.Sinks.Kafka.Enabled {
			own = append(own, f.Topics.Incidents)
		}
	}
	checkReplication(ctx, kadm.NewClient(admin), f.Topics, own, o.Logger.With("component", "kafka"))
	parts.Kafka = NewKafkaWatch(admin, slices.Concat(own, f.Topics.Spans, f.Topics.Corrections, LogTopics(f)),
		f.Topics.MinInsyncReplicas, o.Logger.With("component", "kafka"))
	parts.Health = map[string]HealthReporter{}
	if op.clickhouse != nil {
		parts.Health["clickhouse"] = op.clickhouse
	}
	for i, s := range o.ExtraSinks {
		if h, ok := s.(HealthReporter); ok {
			parts.Health[fmt.Sprintf("extra-%d", i)] = h
		}
	}
	if op.kafka != nil {
		if op.guard, err = newFuseGuard(f.Topics.Fuse, kopt, op.kafka, o.Signer, o.Logger.With("component", "fuse-guard")); err != nil {
			return Parts{}, op, err
		}
	}

	stateCl, err := kgo.NewClient(append(slices.Clone(kopt), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20))...)
	if err != nil {
		return Parts{}, op, err
	}
	clients = append(clients, stateCl)
	store := statestore.New(stateCl, f.Topics.State, f.Kafka.Brokers, kopt...)
	store.SetDeployment(f.Deployment(), LegacyState(f), o.Logger.With("component", "statestore"))
	parts.Store, parts.StateForeign, parts.StateSizes = store, store.Foreign, store.Sizes
	parts.Signer = o.Signer

	if parts.Producer, err = kgo.NewClient(append(slices.Clone(kopt), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond))...); err != nil {
		return Parts{}, op, err
	}
	clients = append(clients, parts.Producer)
	parts.NewConsumer = func(cfg ingest.Config) (Consumer, error) {
		cfg.ClientOpts = append(slices.Clone(groupOpts), cfg.ClientOpts...)
		c, err := ingest.NewFromConfig(cfg)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	switch {
	case instanceID != "" && f.Kafka.LeaveOnShutdown:
		parts.Leave = func(groups ...string) { leaveGroups(admin, instanceID, groups, o.Logger) }
	case instanceID != "":
		parts.Leave = func(groups ...string) {
			o.Logger.Info("static member keeps its place in its groups (kafka.leave_on_shutdown: false): its partitions wait for it to come back, or for its session timeout",
				"groups", groups, "instance_id", instanceID)
		}
	}
	// The producer and the state client close last (New closed them in
	// this order before the parts existed).
	parts.Close = func() {
		slices.Reverse(clients)
		closeClients()
	}
	return parts, op, nil
}

// openSinks opens the configured sinks in the order they are written:
// ClickHouse, Kafka, JSONL, then the extra ones.
func openSinks(ctx context.Context, o Options, kopt []kgo.Opt, parts *Parts) (op opened, err error) {
	f := o.Config
	if ch := f.Sinks.ClickHouse; len(ch.Addr) > 0 {
		cc, err := ClickHouseConfig(ch)
		if err != nil {
			return op, err
		}
		if ch.Migrate {
			if err := migrate(ctx, cc, o.Logger); err != nil {
				return op, err
			}
		}
		if op.clickhouse, err = clickhousesink.New(cc); err != nil {
			return op, fmt.Errorf("sinks.clickhouse: %w", err)
		}
		parts.Sinks = append(parts.Sinks, op.clickhouse)
	}
	if f.Sinks.Kafka.Enabled {
		kc := kafkasink.DefaultConfig()
		kc.Brokers = f.Kafka.Brokers
		kc.VerdictTopic, kc.FuseTopic = f.Topics.Verdicts, f.Topics.Fuse
		if f.Incidents.Enabled {
			kc.IncidentTopic = f.Topics.Incidents
		}
		kc.VerdictPartitions, kc.FusePartitions = f.Sinks.Kafka.Partitions, f.Sinks.Kafka.Partitions
		kc.ReplicationFactor = f.Topics.ReplicationFactor
		if n := f.Topics.MinInsyncReplicas; n > 0 {
			isr := strconv.Itoa(n)
			kc.VerdictTopicConfigs = map[string]string{"min.insync.replicas": isr}
			kc.FuseTopicConfigs = map[string]string{"min.insync.replicas": isr}
		}
		if op.kafka, err = kafkasink.New(ctx, kc, kopt...); err != nil {
			return op, fmt.Errorf("sinks.kafka: %w", err)
		}
		parts.Sinks = append(parts.Sinks, op.kafka)
	}
	if path := f.Sinks.JSONL.Path; path != "" {
		if op.jsonl, err = jsonlsink.Open(path); err != nil {
			return op, err
		}
		parts.Sinks = append(parts.Sinks, op.jsonl)
	}
	parts.Sinks = append(parts.Sinks, o.ExtraSinks...)
	return op, nil
}

// leaveGroups makes a static member leave its groups at a clean shutdown,
// so that the other processes take its partitions over at once (a static
// member does not leave on its own: after a crash its restart rejoins in
// its place, but after a shutdown it may not come back).
func leaveGroups(admin *kgo.Client, instanceID string, groups []string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	adm := kadm.NewClient(admin)
	for _, g := range groups {
		if _, err := adm.LeaveGroup(ctx, kadm.LeaveGroup(g).InstanceIDs(instanceID).Reason("fusebox shutting down")); err != nil {
			log.Warn("static member could not leave its group: its partitions wait for its session timeout", "group", g, "instance_id", instanceID, "err", err)
		}
	}
}

// The sinks implement the engine's Sink; the assertions are here, in the
// assembly, so that no sink imports the engine.
var (
	_ engine.Sink = (*clickhousesink.Sink)(nil)
	_ engine.Sink = (*kafkasink.Sink)(nil)
	_ engine.Sink = (*jsonlsink.Sink)(nil)
)
