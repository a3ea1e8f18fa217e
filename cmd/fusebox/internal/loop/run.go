package loop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/cmd/fusebox/internal/product"
	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/fuse/fusehttp"
	"github.com/fusebox-dev/fusebox/internal/broker"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/schemas"
)

// Fallback is the healthy model the loop degrades and fails over to.
const Fallback = "small"

// Options are a run's scenario.
type Options struct {
	// Brokers of a Kafka cluster; nil starts an in-process kfake one.
	Brokers []string
	// Duration of the run (wall time).
	Duration time.Duration
	// Incidents, Start/End as offsets of wall time; each Target names a
	// tenant and a model (the model is served by its own provider). The
	// users send Rate requests per second for each incident's (tenant,
	// model) through the gateway.
	Incidents []traffic.Incident
	Rate      float64
	// DirectRate is the requests per second each incident's users also
	// send straight to the model's provider (not through the gateway): the
	// failing provider's own SLO.
	DirectRate float64
	// Budget is the users' latency SLO (and the tail SLO's budget): far
	// above the healthy latency (P99.9 about 130 ms), so that a loaded
	// machine's stalls of a second do not breach it.
	Budget time.Duration
	// CanaryShare is the share of an incident's users' requests on its
	// Target.Variant when it names one (the rest on the baseline).
	CanaryShare float64
	// ConfidenceFloor: for a CanaryDrift incident, a call complies only
	// with a confidence score at least this.
	ConfidenceFloor float64
	// Median is the providers' median latency.
	Median time.Duration
	Seed   uint64
	// NoShadow makes the loop's gateway send half-open probes to the
	// failing model as users' requests (their answers are the users'),
	// instead of serving them from the fallback and sending a copy.
	NoShadow bool
	Logger   *slog.Logger
	// OnCommand, when set, is called with each command the loop's
	// gateway applies and when (offset from the start); it must not block.
	OnCommand func(at time.Duration, c schemas.FuseCommand)
}

// DefaultOptions is the scenario of the test and of `fusebox bench loop`:
// 60 s, a latency tail (10% of calls) on acme's "big" from 8 s to 34 s, an error burst
// on globex's "large" from 10 s to 36 s and a confidence drift of
// initech's "mid" canary (30% of its requests) from 12 s to 38 s, 60
// requests per second each (and 10 straight to the provider).
func DefaultOptions() Options {
	return Options{
		Duration: 60 * time.Second,
		Incidents: []traffic.Incident{
			{Name: "latency tail", Kind: traffic.TailBlowup, Start: 8 * time.Second, End: 34 * time.Second,
				Target: traffic.Target{Tenant: "acme", Model: "big"}, Magnitude: 0.1},
			{Name: "provider errors", Kind: traffic.ErrorBurst, Start: 10 * time.Second, End: 36 * time.Second,
				Target: traffic.Target{Tenant: "globex", Model: "large"}, Magnitude: 0.3},
			{Name: "canary confidence", Kind: traffic.CanaryDrift, Start: 12 * time.Second, End: 38 * time.Second,
				Target: traffic.Target{Tenant: "initech", Model: "mid", Variant: "canary"}, Magnitude: 0.2},
		},
		CanaryShare: 0.3, ConfidenceFloor: 0.6,
		Rate: 60, DirectRate: 10, Budget: 2 * time.Second, Median: 50 * time.Millisecond, Seed: 1,
	}
}

// ConfigYAML is the run's SLO file (brokers and the tail budget filled
// in): windows of seconds evaluated every second, a breaker tripping on 2
// breaches of 3 evaluations, open 4 s (doubling on a re-trip, up to 8 s),
// probing 20% of the traffic, closing after 2 healthy evaluations; a tail
// breach degrades to Fallback, an error-budget page trips (the gateway
// fails over to Fallback), a canary drift rolls the canary back. A
// half-open target is judged on the probes of the last window, so
// half_open_fraction × rate × window must reach min_samples (tail: 0.2 ×
// 60/s × 10 s = 120 ≥ 100; drift: 0.2 × 18/s × 6 s ≥ 15), or it waits in
// half-open for ever.
const ConfigYAML = `version: loop-v1
kafka: {brokers: [%s], group: loop, client_id: loop}
topics: {keyed_partitions: 2}
time: {allowed_lateness: 1s, idle_source_timeout: 1s, checkpoint_every: 500ms}
http: {listen: ""}
rollups: {enabled: false}
sinks: {kafka: {enabled: true, partitions: 1}}
effect: {evaluations: 20}
slos:
  - name: latency-p999
    tail: {metric: duration_ms, p: 0.999, budget: %d, window: 10s, every: 1s, min_samples: 100, min_exceedances: 10}
  - name: canary-confidence
    drift: {metric: confidence, mode: canary, window: 6s, every: 1s, consecutive: 2, min_samples: 15}
  - name: availability
    burnrate:
      target: 0.99
      every: 1s
      page: [{long: 10s, short: 2s, factor: 5}]
      ticket: []
      min_events: 50
      min_bad_events: 5
breaker:
  target: [tenant, service, model]
  k: 2
  n: 3
  cool_down: 4s
  max_cool_down: 8s
  flap_window: 10s
  close_after: 2
  half_open_fraction: 0.2
  command_ttl: 10s
  rules:
    - {processor: tail, action: degrade, fallback: small}
    - {processor: burnrate, metric: burn_rate_page, action: trip}
    - {processor: drift, action: rollback, fallback: baseline, target: [tenant, service, model, variant]}
`

// Row is one incident's outcome.
type Row struct {
	Incident traffic.Incident
	// Users' SLO over the incident, with the loop and without it.
	With, Without SLO
	// After: from the first command the loop's gateway applied for the
	// incident's target to the incident's end (the same span of time in
	// the run without the loop).
	WithAfter, WithoutAfter SLO
	// Direct is the failing provider's SLO over the incident, as the
	// traffic sent straight to it saw it (loop run); Probes is the users'
	// calls the loop's gateway admitted to it as half-open probes.
	Direct, Probes SLO
	// Commanded is when the first command for the target was applied
	// (offset), 0 when none; Action its action.
	Commanded time.Duration
	Action    schemas.Action
	// Closed is when a close was applied after it, 0 when none.
	Closed time.Duration
	// Effect is fusebox's effect verdict on that first command (read back
	// from the verdict topic; processor "effect", Method "ACTION:OUTCOME"),
	// nil when none came by the end of the run.
	Effect *schemas.Verdict
	// FirstVersion is the first command's version (what Effect judges).
	FirstVersion uint64
}

// Result is a run's report.
type Result struct {
	Rows     []Row
	Commands []schemas.FuseCommand // applied by the loop's gateway, in order
	// Effects are fusebox's effect verdicts of the run, as the verdict
	// topic holds them, in order.
	Effects  []schemas.Verdict
	Counters map[fusehttp.Label]uint64
	Spans    int64 // exported by the loop's gateway
	// SpanStats: per tenant/model/variant, the spans the loop's gateway
	// exported and their largest duration (ms).
	SpanStats map[string][2]float64
}

// Run runs the scenario with and without the loop, at the same time, and
// reports per incident.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if len(o.Incidents) == 0 || o.Duration <= 0 || o.Rate <= 0 {
		return nil, errors.New("loop: give incidents, a duration and a rate")
	}
	brokers := o.Brokers
	if len(brokers) == 0 {
		b, err := broker.Start(ctx, broker.Config{Listen: "127.0.0.1:0", Partitions: 2, AutoCreateTopics: true, LogLevel: "none"})
		if err != nil {
			return nil, err
		}
		defer b.Close()
		brokers = []string{b.Addr()}
	}
	cfg, err := config.Parse("loop.yaml", []byte(fmt.Sprintf(ConfigYAML, strings.Join(brokers, ", "), o.Budget.Milliseconds())))
	if err != nil {
		return nil, fmt.Errorf("loop: the SLO file: %w", err)
	}
	var secret [32]byte
	rand.Read(secret[:])
	ring, err := fuse.ParseKeyring("loop:" + hex.EncodeToString(secret[:]))
	if err != nil {
		return nil, err
	}
	fb, err := product.Start(ctx, product.Config{File: cfg, Logger: o.Logger.With("component", "pipeline"), Keys: ring, SourcePartitions: 2})
	if err != nil {
		return nil, err
	}
	defer fb.Close()
	if _, err := fb.Open(ctx); err != nil {
		return nil, fmt.Errorf("loop: start the pipeline: %w", err)
	}
	pctx, stopPipe := context.WithCancel(ctx)
	pdone := make(chan error, 1)
	go func() { pdone <- fb.Run(pctx) }()
	defer func() { stopPipe(); <-pdone }()

	// The loop's gateway's fuse client: it records every command it
	// applies, and when.
	fc, err := fuse.NewClient(fuse.WithBrokers(brokers...), fuse.WithTopic(cfg.Topics.Fuse), fuse.WithKeyring(ring),
		fuse.WithLogger(o.Logger.With("component", "fuse-client")))
	if err != nil {
		return nil, err
	}
	start := time.Now()
	cmds := &commandLog{start: start, notify: o.OnCommand}
	fc.OnChange(cmds.applied)
	fctx, stopFuse := context.WithCancel(ctx)
	fdone := make(chan error, 1)
	go func() { fdone <- fc.Run(fctx) }()
	defer func() { stopFuse(); <-fdone }()
	if err := fc.WaitReady(ctx); err != nil {
		return nil, err
	}

	// fusebox's effect verdicts, read back from the verdict topic: what
	// fusebox concluded about each command the gateway acted on.
	vc, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(cfg.Topics.Verdicts),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AllowAutoTopicCreation())
	if err != nil {
		return nil, err
	}
	defer vc.Close()
	effects := &effectLog{}
	vctx, stopVerdicts := context.WithCancel(ctx)
	vdone := make(chan struct{})
	go func() { defer close(vdone); effects.read(vctx, vc) }()
	defer func() { stopVerdicts(); <-vdone }()

	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(5*time.Millisecond), kgo.AllowAutoTopicCreation())
	if err != nil {
		return nil, err
	}
	defer prod.Close()

	// Two worlds with the same providers (same seeds and scripts): the
	// loop's gateway follows fusebox, the other one never gets a command.
	shadow := Fallback
	if o.NoShadow {
		shadow = ""
	}
	with, err := newWorld(o, fc, prod, cfg.Topics.Spans[0], shadow, start)
	if err != nil {
		return nil, err
	}
	defer with.close()
	without, err := newWorld(o, never{}, nil, cfg.Topics.Spans[0], "", start)
	if err != nil {
		return nil, err
	}
	defer without.close()
	direct := map[string]*calls{}
	for _, inc := range o.Incidents {
		direct[inc.Name] = &calls{}
	}

	drive(ctx, o, start, with, without, direct)

	// The effect verdicts of the incidents' first commands: decided within
	// effect.evaluations (20 s of event time) of the command, most of them
	// earlier (recovered); wait for the last ones a little past the run.
	effects.await(ctx, cmds.firsts, 25*time.Second)

	// The users are done: let the probe copies in flight finish, so that
	// what is read below is final (none is still running when Run returns).
	with.gw.Drain()
	return report(o, with, without, direct, cmds, effects), nil
}

// report is the run's Result: per incident, the users' SLO with and
// without the loop, before and after the first command, the provider's
// own, the probes'.
func report(o Options, with, without *world, direct map[string]*calls, cmds *commandLog, effects *effectLog) *Result {
	res := &Result{Counters: with.gw.Counters.Snapshot()}
	res.Effects = effects.all()
	res.Spans, _ = with.gw.Exported()
	res.SpanStats = with.gw.SpanStats()
	var cmdAt []time.Duration
	res.Commands, cmdAt = cmds.all()
	for _, inc := range o.Incidents {
		row := Row{Incident: inc}
		for i, c := range res.Commands {
			if c.Target.Tenant != inc.Target.Tenant || c.Target.Model != inc.Target.Model {
				continue
			}
			if row.Commanded == 0 && c.State != schemas.StateClosed {
				row.Commanded, row.Action, row.FirstVersion = cmdAt[i], c.Action, c.Version
				row.Effect = effects.of(c.Target.String(), c.Version)
			}
			if row.Commanded > 0 && row.Closed == 0 && c.State == schemas.StateClosed {
				row.Closed = cmdAt[i]
			}
		}
		wc, nc := with.users[inc.Name].all(), without.users[inc.Name].all()
		floor := 0.0
		if inc.Kind == traffic.CanaryDrift {
			floor = o.ConfidenceFloor
		}
		row.With, row.Without = judge(wc, inc.Start, inc.End, o.Budget, floor), judge(nc, inc.Start, inc.End, o.Budget, floor)
		if row.Commanded > 0 && row.Commanded < inc.End {
			row.WithAfter = judge(wc, row.Commanded, inc.End, o.Budget, floor)
			row.WithoutAfter = judge(nc, row.Commanded, inc.End, o.Budget, floor)
		}
		row.Direct = judge(direct[inc.Name].all(), inc.Start, inc.End, o.Budget, floor)
		probes := with.gw.ProbeCalls()
		if o.NoShadow {
			probes = wc
		}
		row.Probes = judge(onlyProbes(probes, inc.Target.Tenant, inc.Target.Variant), inc.Start, inc.End, o.Budget, floor)
		res.Rows = append(res.Rows, row)
	}
	return res
}
