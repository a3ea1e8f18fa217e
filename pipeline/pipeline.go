// Package pipeline is fusebox's assembly: ingest → router → keyed topic →
// engine → sinks. Assemble builds the router stage (source topics → keyed
// topic) and the keyed stage (workers, checkpoints) of a loaded SLO file on
// Parts given as interfaces — the sinks, the state store, the signer, the
// consumers — and tracks readiness, sink health, the Kafka brokers leading
// its partitions and metrics (track.go, sinkwatch.go, kafkawatch.go,
// metrics.go). New opens those parts from the SLO file first (parts.go:
// Kafka clients with TLS/SASL and static membership, missing topics with
// the SLO file's replication, weaker existing ones logged (kafka.go),
// ClickHouse migrations, the configured sinks, the fuse guard beside
// the Kafka sink, the state topic). It also maps SLO entries to processors
// through processors/registry (slos.go) and adapts the Kafka client's
// records to the engine's (keyed_decoder.go). `fusebox run`, `fusebox demo`
// and the end-to-end tests all start the pipeline through it, so they run
// the same thing.
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
	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/ingest"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/sinks/clickhousesink"
	"github.com/fusebox-dev/fusebox/sinks/jsonlsink"
	"github.com/fusebox-dev/fusebox/sinks/kafkasink"
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
	cfg *config.File
	log *slog.Logger

	router          *router.Router
	keyed           *engine.Keyed
	foreignState    func() int64         // Parts.StateForeign
	stateSizes      func() map[int32]int // Parts.StateSizes
	source, keyedIn Consumer
	// incidents and incidentsIn are the incident stage and its consumer
	// (incidents.enabled; nil otherwise).
	incidents   *engine.Incidents
	incidentsIn Consumer
	release     func()                 // Parts.Close
	leave       func(groups ...string) // Parts.Leave

	sinks []engine.Sink
	// The sinks New opened from the SLO file (nil when off, and always nil
	// after Assemble alone).
	Kafka      *kafkasink.Sink
	ClickHouse *clickhousesink.Sink
	JSONL      *jsonlsink.Sink
	// Guard follows the fuse topic and repairs it (fuseguard.go); nil
	// when the Kafka sink is off (and after Assemble alone).
	Guard *fuse.Guard

	mu      sync.Mutex
	started time.Time
	// tr counts for Metrics and Ready (metrics.go, track.go).
	tr *tracker
	// sw watches the sinks' health (sinkwatch.go).
	sw *sinkWatch
	// kw watches the Kafka brokers (kafkawatch.go); nil without one.
	kw *KafkaWatch
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

// New opens the parts the SLO file names (Kafka clients, missing topics,
// ClickHouse migrations, the sinks, the fuse guard, the state store;
// parts.go) and assembles both stages on them (Assemble). Nothing is
// consumed until Run.
func New(ctx context.Context, o Options) (*Pipeline, error) {
	f := o.Config
	if o.Signer == nil && !o.InsecureUnsigned && !f.Signing.InsecureUnsigned {
		return nil, ErrNoSigner
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	parts, opened, err := open(ctx, o)
	if err != nil {
		return nil, err
	}
	p, err := Assemble(ctx, f, parts, o.Logger, o.OnCheckpoint)
	if err != nil {
		return nil, err
	}
	p.Kafka, p.ClickHouse, p.JSONL, p.Guard = opened.kafka, opened.clickhouse, opened.jsonl, opened.guard
	return p, nil
}

// Assemble builds the router stage (source topics → keyed topic) and the
// keyed stage (workers, checkpoints) of the SLO file f on parts, which it
// owns from then on (Run closes them; so does a failed Assemble).
// onCheckpoint, when set, is called after every checkpoint (tests).
func Assemble(ctx context.Context, f *config.File, parts Parts, log *slog.Logger, onCheckpoint func(partition int32, nextOffset int64)) (_ *Pipeline, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pipeline{cfg: f, log: log, tr: newTracker(), foreignState: parts.StateForeign, stateSizes: parts.StateSizes, release: parts.Close, leave: parts.Leave,
		kw: parts.Kafka}
	p.tr.log = log.With("component", "breaker")
	p.tr.noSamples.log = log.With("component", "slo")
	p.sinks = append(slices.Clone(parts.Sinks), p.tr.sink()) // last: counts what every sink accepted
	defer func() {
		if err != nil {
			p.closeSinks(context.Background())
			p.closeParts()
		}
	}()
	if parts.Store == nil || parts.Producer == nil || parts.NewConsumer == nil {
		return nil, errors.New("pipeline: Parts needs a Store, a Producer and NewConsumer")
	}
	wc, err := config.WorkerConfig(f)
	if err != nil {
		return nil, err
	}
	health := parts.Health
	if health == nil {
		health = map[string]HealthReporter{}
		for i, s := range parts.Sinks {
			if h, ok := s.(HealthReporter); ok {
				health[fmt.Sprintf("sink-%d", i)] = h
			}
		}
	}
	p.sw = newSinkWatch(log.With("component", "sinks"), health)

	keyedSinks := p.sinks
	if f.Incidents.Enabled {
		// The summaries go to the incident stage; the stage writes its
		// records and commands to the same sinks as the keyed stage.
		keyedSinks = append(slices.Clone(p.sinks), &summarySink{cl: parts.Producer, topic: f.Topics.Summaries, partitions: f.Topics.KeyedPartitions})
		if err := p.assembleIncidents(f, parts, log); err != nil {
			return nil, err
		}
	}
	if p.keyed, err = engine.NewKeyed(engine.KeyedConfig{
		Worker: wc, Store: parts.Store, Sinks: keyedSinks, Signer: parts.Signer, Deployment: f.Deployment(),
		CheckpointEvery: f.Time.CheckpointEvery, CheckpointRecords: f.Time.CheckpointRecords,
		WatermarkStallEvaluations: f.Time.WatermarkStallEvaluations,
		Logger:                    log.With("component", "engine"),
		OnCheckpoint:              onCheckpoint,
		BatchLatency:              p.tr.latency,
	}); err != nil {
		return nil, err
	}

	logTopics := LogTopics(f)
	sources := slices.Concat(f.Topics.Spans, f.Topics.Corrections, logTopics)
	if p.router, err = router.New(ctx, parts.Producer, router.Config{
		KeyedTopic: f.Topics.Keyed, SourceTopics: sources, ByTenant: wc.KeyDims.Tenant,
		HeartbeatEvery: min(time.Second, config.MinEvery(f)/10), IdleTimeout: f.Time.IdleSourceTimeout,
		Deployment: f.Deployment(), KeyedBatchVersion: f.Compat.KeyedBatchVersion(), Logger: log.With("component", "router"),
	}); err != nil {
		return nil, WrapKafkaAuth(err, f.Kafka.SASL.Mechanism != "")
	}
	enc, err := ingest.ParseEncoding(f.Topics.SpanEncoding)
	if err != nil {
		return nil, fmt.Errorf("topics.span_encoding: %w", err)
	}
	src := ingest.DefaultConfig()
	src.Brokers, src.Group = f.Kafka.Brokers, f.Kafka.Group+".router"
	src.SpanTopics, src.CorrectionTopics = f.Topics.Spans, f.Topics.Corrections
	src.LogTopics, src.Evaluations = logTopics, f.Evaluations
	src.SpanEncoding, src.Attributes, src.Limits = enc, f.Attributes, f.Limits
	src.MaxFutureSkew, src.RejectLogEvery = f.Time.MaxFutureSkew, f.Log.RejectionsEvery
	src.DLQTopic, src.Handlers = f.Topics.DLQ, p.router.Handler
	src.Logger = log.With("component", "ingest")
	if p.source, err = parts.NewConsumer(src); err != nil {
		return nil, err
	}
	kin := ingest.DefaultConfig()
	kin.Brokers, kin.Group = f.Kafka.Brokers, f.Kafka.Group+".engine"
	kin.SpanTopics, kin.CorrectionTopics = nil, nil
	kin.Decoders = map[string]ingest.Decoder{f.Topics.Keyed: engine.KeyedDecoder}
	kin.DLQTopic, kin.Handlers = f.Topics.DLQ, p.keyed.Handler
	// 4x the checkpoint trigger: a partition checkpoints long before its
	// consumer would pause it.
	kin.MaxUnackedRecords, kin.MaxUnackedBytes = 4*f.Time.CheckpointRecords, f.Time.MaxUnackedBytes
	kin.Logger = log.With("component", "engine-ingest")
	if p.keyedIn, err = parts.NewConsumer(kin); err != nil {
		return nil, err
	}
	return p, nil
}

// LogTopics are the log topics the SLO file has read: topics.logs when
// evaluation events are turned on, else none (they are read only for
// those).
func LogTopics(f *config.File) []string {
	if f.Evaluations.Enabled() {
		return f.Topics.Logs
	}
	return nil
}

// LegacyState says whether this deployment may restore a checkpoint
// written before deployment ids (unprefixed state keys): unless its state
// topic is the one every deployment of earlier versions shared by default
// (fusebox.state) and its group is not the default one, since then nobody
// can tell whose checkpoint it is.
func LegacyState(f *config.File) bool {
	return f.Topics.State != "fusebox.state" || f.Kafka.Group == "fusebox"
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
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	go p.sw.run(ctx)
	if p.kw != nil {
		go p.kw.Run(ctx)
	}
	runs := []func(context.Context) error{p.router.Run, p.source.Run, p.keyedIn.Run}
	if p.incidentsIn != nil {
		runs = append(runs, p.incidentsIn.Run)
	}
	for _, run := range runs {
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
	p.closeParts()
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

// leaveGroups calls Parts.Leave with both stages' groups at a clean
// shutdown (New's: a static member leaves them, so that the other
// processes take its partitions over at once).
func (p *Pipeline) leaveGroups() {
	if p.leave != nil {
		groups := []string{p.cfg.Kafka.Group + ".router", p.cfg.Kafka.Group + ".engine"}
		if p.incidentsIn != nil {
			groups = append(groups, p.cfg.Kafka.Group+".incidents")
		}
		p.leave(groups...)
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

// closeParts releases what Parts.Close releases (New's: its Kafka
// clients), once.
func (p *Pipeline) closeParts() {
	if p.release != nil {
		p.release()
		p.release = nil
	}
}

// Keyed is the keyed stage (stats for metrics and tests).
func (p *Pipeline) Keyed() *engine.Keyed { return p.keyed }

// Source is the router's consumer of the source topics.
func (p *Pipeline) Source() Consumer { return p.source }

// KeyedConsumer is the keyed stage's consumer of the keyed topic.
func (p *Pipeline) KeyedConsumer() Consumer { return p.keyedIn }

// ForeignRecords is how many records of other deployments this process
// skipped: keyed records (another deployment's router writes this keyed
// topic) and checkpoint records (another deployment shares this state
// topic).
func (p *Pipeline) ForeignRecords() (keyed, state int64) {
	return p.keyed.ForeignRecords(), p.stateForeign()
}

// CheckpointBytes returns, per keyed partition this process owns, the size
// in bytes of its newest checkpoint (written, or read at the restore); nil
// when the state store does not report sizes (Parts.StateSizes).
func (p *Pipeline) CheckpointBytes() map[int32]int {
	if p.stateSizes == nil {
		return nil
	}
	owned := p.keyed.Partitions()
	out := map[int32]int{}
	for part, n := range p.stateSizes() {
		if _, ok := owned[part]; ok {
			out[part] = n
		}
	}
	return out
}

// stateForeign is the state store's count of other deployments'
// checkpoint records (Parts.StateForeign), 0 without one.
func (p *Pipeline) stateForeign() int64 {
	if p.foreignState == nil {
		return 0
	}
	return p.foreignState()
}
