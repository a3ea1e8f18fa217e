// Package pipeline assembles fusebox from a loaded SLO file: the router
// stage (source topics → keyed topic), the keyed stage (workers, state
// store), the sinks and the signer. `fusebox run`, `fusebox demo` and the
// end-to-end tests all start the pipeline through it, so they run the same
// thing.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/engine/router"
	"github.com/fusebox-dev/fusebox/engine/statestore"
	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/ingest"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/sinks/clickhousesink"
	"github.com/fusebox-dev/fusebox/sinks/jsonlsink"
	"github.com/fusebox-dev/fusebox/sinks/kafkasink"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Options are what the SLO file does not say.
type Options struct {
	Config *config.File
	Logger *slog.Logger
	// Signer signs fuse commands. Nil is refused unless InsecureUnsigned.
	Signer           engine.Signer
	InsecureUnsigned bool
	// ExtraSinks receive the output too (the demo's live view).
	ExtraSinks []engine.Sink
	// KgoOpts are appended to every Kafka client's options.
	KgoOpts []kgo.Opt
	// SourcePartitions is the partition count of source topics fusebox
	// creates when they are missing. Default 6.
	SourcePartitions int32
	// OnCheckpoint is passed to the keyed stage (tests).
	OnCheckpoint func(partition int32, nextOffset int64)
}

// Pipeline is a started-up fusebox; Run drives it.
type Pipeline struct {
	cfg  *config.File
	log  *slog.Logger
	kopt []kgo.Opt

	admin, producer, stateCl *kgo.Client
	router                   *router.Router
	keyed                    *engine.Keyed
	store                    *statestore.Store
	source, keyedIn          *ingest.Consumer

	sinks     []engine.Sink
	Kafka     *kafkasink.Sink      // nil when off
	ClickHous *clickhousesink.Sink // nil when off
	JSONL     *jsonlsink.Sink      // nil when off
	// Guard follows the fuse topic and repairs it (fuseguard.go); nil
	// when the Kafka sink is off.
	Guard *fuse.Guard

	mu      sync.Mutex
	started time.Time
	// tr counts for Metrics and Ready (metrics.go, track.go).
	tr *tracker
	// sw watches the sinks' health (sinkwatch.go).
	sw *sinkWatch
	// instanceID is the static group member id, "" for dynamic membership.
	instanceID string
}

// InstanceID resolves kafka.instance_id: "auto" is the host name.
func InstanceID(v string) (string, error) {
	if v != "auto" {
		return v, nil
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "", fmt.Errorf("kafka.instance_id auto: no host name: %v", err)
	}
	return "fusebox-" + h, nil
}

// ErrNoSigner is returned when no signer is given and unsigned commands were
// not allowed.
var ErrNoSigner = errors.New("pipeline: no fuse signing key: set signing.keys_file or FUSEBOX_FUSE_KEYS, or pass --insecure-unsigned")

// New connects to Kafka (and ClickHouse), creates missing topics, applies
// ClickHouse migrations when configured, and builds both stages. Nothing is
// consumed until Run.
func New(ctx context.Context, o Options) (_ *Pipeline, err error) {
	f := o.Config
	if o.Signer == nil && !o.InsecureUnsigned && !f.Signing.InsecureUnsigned {
		return nil, ErrNoSigner
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.SourcePartitions <= 0 {
		o.SourcePartitions = 6
	}
	p := &Pipeline{cfg: f, log: o.Logger, tr: newTracker()}
	defer func() {
		if err != nil {
			p.closeClients()
			p.closeSinks(context.Background())
		}
	}()
	kopt, err := KafkaOpts(f.Kafka)
	if err != nil {
		return nil, err
	}
	p.kopt = append(kopt, o.KgoOpts...)
	sasl := f.Kafka.SASL.Mechanism != ""
	if p.instanceID, err = InstanceID(f.Kafka.InstanceID); err != nil {
		return nil, err
	}
	// The group members of both stages: static (same id in each group)
	// when an instance id is set.
	groupOpts := slices.Clone(p.kopt)
	if p.instanceID != "" {
		groupOpts = append(groupOpts, kgo.InstanceID(p.instanceID))
	}

	wc, err := WorkerConfig(f)
	if err != nil {
		return nil, err
	}

	if p.admin, err = kgo.NewClient(p.kopt...); err != nil {
		return nil, err
	}
	compact := map[string]*string{"cleanup.policy": strp("compact")}
	specs := []topicSpec{
		{name: f.Topics.Keyed, partitions: f.Topics.KeyedPartitions},
		{name: f.Topics.State, partitions: f.Topics.KeyedPartitions, configs: compact},
		{name: f.Topics.DLQ, partitions: 3},
	}
	var logTopics []string // read only for evaluation events
	if f.Evaluations.Enabled() {
		logTopics = f.Topics.Logs
	}
	for _, t := range slices.Concat(f.Topics.Spans, f.Topics.Corrections, logTopics) {
		specs = append(specs, topicSpec{name: t, partitions: o.SourcePartitions})
	}
	counts, err := ensureTopics(ctx, kadm.NewClient(p.admin), sasl, specs)
	if err != nil {
		return nil, err
	}
	if counts[f.Topics.State] != counts[f.Topics.Keyed] {
		return nil, fmt.Errorf("topics.state %s has %d partitions but topics.keyed %s has %d: they must match (one checkpoint partition per keyed partition)",
			f.Topics.State, counts[f.Topics.State], f.Topics.Keyed, counts[f.Topics.Keyed])
	}

	if err := p.openSinks(ctx, o); err != nil {
		return nil, err
	}
	p.sinks = append(p.sinks, p.tr.sink()) // last: counts what every sink accepted
	health := map[string]healthReporter{}
	if p.ClickHous != nil {
		health["clickhouse"] = p.ClickHous
	}
	for i, s := range o.ExtraSinks {
		if h, ok := s.(healthReporter); ok {
			health[fmt.Sprintf("extra-%d", i)] = h
		}
	}
	p.sw = newSinkWatch(o.Logger.With("component", "sinks"), health)
	if p.Kafka != nil {
		if p.Guard, err = p.newFuseGuard(o.Signer, o.Logger.With("component", "fuse-guard")); err != nil {
			return nil, err
		}
	}

	if p.stateCl, err = kgo.NewClient(append(slices.Clone(p.kopt), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20))...); err != nil {
		return nil, err
	}
	store := statestore.New(p.stateCl, f.Topics.State, f.Kafka.Brokers, p.kopt...)
	store.SetDeployment(f.Deployment(), LegacyState(f), o.Logger.With("component", "statestore"))
	p.store = store
	if p.keyed, err = engine.NewKeyed(engine.KeyedConfig{
		Worker: wc, Store: store, Sinks: p.sinks, Signer: o.Signer, Deployment: f.Deployment(),
		CheckpointEvery: f.Time.CheckpointEvery, CheckpointRecords: f.Time.CheckpointRecords,
		WatermarkStallEvaluations: f.Time.WatermarkStallEvaluations,
		Logger:                    o.Logger.With("component", "engine"),
		OnCheckpoint:              p.tr.onCheckpoint(o.OnCheckpoint),
	}); err != nil {
		return nil, err
	}

	if p.producer, err = kgo.NewClient(append(slices.Clone(p.kopt), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond))...); err != nil {
		return nil, err
	}
	sources := slices.Concat(f.Topics.Spans, f.Topics.Corrections, logTopics)
	if p.router, err = router.New(ctx, p.producer, router.Config{
		KeyedTopic: f.Topics.Keyed, SourceTopics: sources, ByTenant: wc.KeyDims.Tenant,
		HeartbeatEvery: min(time.Second, minEvery(f)/10), IdleTimeout: f.Time.IdleSourceTimeout,
		Deployment: f.Deployment(), Logger: o.Logger.With("component", "router"),
	}); err != nil {
		return nil, WrapKafkaAuth(err, sasl)
	}
	enc, err := ingest.ParseEncoding(f.Topics.SpanEncoding)
	if err != nil {
		return nil, fmt.Errorf("topics.span_encoding: %w", err)
	}
	if p.source, err = ingest.New(
		ingest.Brokers(f.Kafka.Brokers...), ingest.Group(f.Kafka.Group+".router"),
		ingest.SpanTopics(f.Topics.Spans...), ingest.CorrectionTopics(f.Topics.Corrections...),
		ingest.LogTopics(logTopics...), ingest.Evaluations(f.Evaluations),
		ingest.SpanEncoding(enc), ingest.Attributes(f.Attributes), ingest.Limits(f.Limits),
		ingest.MaxFutureSkew(f.Time.MaxFutureSkew), ingest.RejectLogEvery(f.Log.RejectionsEvery),
		ingest.DLQTopic(f.Topics.DLQ), ingest.Handlers(p.tr.routerHandlers(p.router.Handler)),
		ingest.ClientOpts(groupOpts...), ingest.Logger(o.Logger.With("component", "ingest")),
	); err != nil {
		return nil, err
	}
	if p.keyedIn, err = ingest.New(
		ingest.Brokers(f.Kafka.Brokers...), ingest.Group(f.Kafka.Group+".engine"),
		ingest.SpanTopics(), ingest.CorrectionTopics(),
		ingest.TopicDecoder(f.Topics.Keyed, KeyedDecoder),
		ingest.DLQTopic(f.Topics.DLQ), ingest.Handlers(p.tr.keyedHandlers(p.keyed.Handler)),
		// 4x the checkpoint trigger: a partition checkpoints long before
		// its consumer would pause it.
		ingest.MaxUnackedRecords(4*f.Time.CheckpointRecords), ingest.MaxUnackedBytes(f.Time.MaxUnackedBytes),
		ingest.ClientOpts(groupOpts...), ingest.Logger(o.Logger.With("component", "engine-ingest")),
	); err != nil {
		return nil, err
	}
	return p, nil
}

// LegacyState says whether this deployment may restore a checkpoint
// written before deployment ids (unprefixed state keys): unless its state
// topic is the one every deployment of earlier versions shared by default
// (fusebox.state) and its group is not the default one, since then nobody
// can tell whose checkpoint it is.
func LegacyState(f *config.File) bool {
	return f.Topics.State != "fusebox.state" || f.Kafka.Group == "fusebox"
}

// openSinks opens the configured sinks in the order they are written:
// ClickHouse, Kafka, JSONL, then the extra ones.
func (p *Pipeline) openSinks(ctx context.Context, o Options) error {
	f := p.cfg
	if ch := f.Sinks.ClickHouse; len(ch.Addr) > 0 {
		cc, err := ClickHouseConfig(ch)
		if err != nil {
			return err
		}
		if ch.Migrate {
			if err := migrate(ctx, cc, p.log); err != nil {
				return err
			}
		}
		if p.ClickHous, err = clickhousesink.New(cc); err != nil {
			return fmt.Errorf("sinks.clickhouse: %w", err)
		}
		p.sinks = append(p.sinks, p.ClickHous)
	}
	if f.Sinks.Kafka.Enabled {
		kc := kafkasink.DefaultConfig()
		kc.Brokers = f.Kafka.Brokers
		kc.VerdictTopic, kc.FuseTopic = f.Topics.Verdicts, f.Topics.Fuse
		kc.VerdictPartitions, kc.FusePartitions = f.Sinks.Kafka.Partitions, f.Sinks.Kafka.Partitions
		var err error
		if p.Kafka, err = kafkasink.New(ctx, kc, p.kopt...); err != nil {
			return fmt.Errorf("sinks.kafka: %w", err)
		}
		p.sinks = append(p.sinks, p.Kafka)
	}
	if path := f.Sinks.JSONL.Path; path != "" {
		var err error
		if p.JSONL, err = jsonlsink.Open(path); err != nil {
			return err
		}
		p.sinks = append(p.sinks, p.JSONL)
	}
	p.sinks = append(p.sinks, o.ExtraSinks...)
	return nil
}

// Run consumes until ctx ends or a stage fails, then shuts down in order:
// stop fetching, let every partition finish (the router flushes its
// produces, the keyed stage checkpoints: sinks flushed, state saved),
// commit, close the sinks. It returns the first failure.
func (p *Pipeline) Run(ctx context.Context) error {
	p.mu.Lock()
	p.started = time.Now()
	p.mu.Unlock()
	p.tr.state.Store(trackerRunning)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 3)
	var wg sync.WaitGroup
	go p.sw.run(ctx)
	for _, run := range []func(context.Context) error{p.router.Run, p.source.Run, p.keyedIn.Run} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil {
				errs <- err
				cancel()
			}
		}()
	}
	guardDone := make(chan struct{})
	if p.Guard != nil {
		// Not a stage: a failing guard is logged (it retries), never stops
		// the pipeline; it stops with ctx, before the sinks close.
		go func() {
			defer close(guardDone)
			if err := p.Guard.Run(ctx); err != nil {
				p.log.Warn("fuse guard stopped", "error", err)
			}
		}()
	} else {
		close(guardDone)
	}
	wg.Wait()
	cancel()
	<-guardDone
	p.tr.state.Store(trackerStopped)
	p.leaveGroups()
	close(errs)
	closeCtx, done := context.WithTimeout(context.Background(), 30*time.Second)
	defer done()
	err := p.closeSinks(closeCtx)
	p.closeClients()
	var first error
	for e := range errs {
		if first == nil {
			first = e
		}
	}
	if first != nil {
		return first
	}
	return err
}

// leaveGroups makes a static member leave both groups at a clean
// shutdown, so that the other processes take its partitions over at once
// (a static member does not leave on its own: after a crash its restart
// rejoins in its place, but after a shutdown it may not come back).
func (p *Pipeline) leaveGroups() {
	if p.instanceID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	adm := kadm.NewClient(p.admin)
	for _, g := range []string{p.cfg.Kafka.Group + ".router", p.cfg.Kafka.Group + ".engine"} {
		if _, err := adm.LeaveGroup(ctx, kadm.LeaveGroup(g).InstanceIDs(p.instanceID).Reason("fusebox shutting down")); err != nil {
			p.log.Warn("static member could not leave its group: its partitions wait for its session timeout", "group", g, "instance_id", p.instanceID, "err", err)
		}
	}
}

func (p *Pipeline) closeSinks(ctx context.Context) error {
	var errs []error
	for _, s := range p.sinks {
		if err := s.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	p.sinks = nil
	return errors.Join(errs...)
}

func (p *Pipeline) closeClients() {
	for _, c := range []*kgo.Client{p.producer, p.stateCl, p.admin} {
		if c != nil {
			c.Close()
		}
	}
}

// Keyed is the keyed stage (stats for metrics and tests).
func (p *Pipeline) Keyed() *engine.Keyed { return p.keyed }

// Source is the router's consumer of the source topics.
func (p *Pipeline) Source() *ingest.Consumer { return p.source }

// KeyedConsumer is the keyed stage's consumer of the keyed topic.
func (p *Pipeline) KeyedConsumer() *ingest.Consumer { return p.keyedIn }

// ForeignRecords is how many records of other deployments this process
// skipped: keyed records (another deployment's router writes this keyed
// topic) and checkpoint records (another deployment shares this state
// topic).
func (p *Pipeline) ForeignRecords() (keyed, state int64) {
	return p.keyed.ForeignRecords(), p.store.Foreign()
}
