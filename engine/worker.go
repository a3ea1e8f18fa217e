package engine

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

// KeyedRecord is one record of the keyed topic, decoded: the spans and
// corrections one source record sent to this keyed partition (possibly none:
// a heartbeat), and what the router knew of the source's progress.
type KeyedRecord struct {
	// Offset is the record's offset in the keyed partition.
	Offset int64
	// Source is the source record it was made from.
	Source SourceRef
	// SourceMaxEventTime is the newest event time the router had seen on
	// the source partition when it wrote this record (Unix ns), or
	// math.MinInt64 when it had seen none.
	SourceMaxEventTime int64
	// SourceTopics announces the partition count of every source topic,
	// "topic:n,topic:n", sorted by topic.
	SourceTopics string
	// Idle marks the source partition idle: the router saw no records on it
	// for its idle timeout. The next data record from it clears the mark.
	Idle bool
	// IdleFor is, on an idle marker, how long (wall time, ns) the router
	// had seen no valid event on the source when it wrote the marker (the
	// router repeats its markers, each with a longer IdleFor, while the
	// source stays silent); 0 when not known. It is how the wall clock
	// reaches the keyed stage as data: see watermarks.current.
	IdleFor int64
	// SeenAt is, on an idle marker with IdleFor, the router's wall clock
	// (Unix ns) when the source's last valid event came; 0 when not known.
	// SeenAt - SourceMaxEventTime is how far the source's event time was
	// behind the wall clock: a source more than WorkerConfig.LiveLag
	// behind (a backfill, a replay) is not advanced by its silence. Used
	// only when the keyed stage does not know the Kafka timestamp of the
	// source's last data record (see watermarks.silent).
	SeenAt int64
	// Timestamp is the record's Kafka timestamp (Unix ns): the router's
	// wall clock when it produced the record (kgo stamps it; the broker's
	// under LogAppendTime); 0 when unknown. It is data of the keyed topic,
	// so a replay reads the same: the all-idle advance measures a source's
	// silence with it (see watermarks.silent).
	Timestamp int64
	// Deployment is the HeaderDeployment of the router that wrote it; ""
	// when absent.
	Deployment  string
	Spans       []schemas.Span
	Corrections []schemas.Correction
}

// SLOSpec is one SLO of the configuration as the engine runs it.
type SLOSpec struct {
	Meta  processors.Meta
	Match schemas.Match
	// StateID identifies what the SLO's windows hold (its kind, match and
	// the parameters that shape its windows, not those that only judge
	// them): a checkpoint's state of an SLO of the same name is restored
	// only under the same StateID.
	StateID string
	// New makes the processor instance for one partition worker.
	New func() (processors.Processor, error)
}

// Breaker turns verdicts into fuse commands (processors/breaker).
type Breaker interface {
	Observe(v schemas.Verdict) []schemas.FuseCommand
	Advance(nowUnixNano int64) []schemas.FuseCommand
	// ProbesFor returns, for the SLO named slo, the keys of the half-open
	// targets it tripped, each with the start of its probe (Unix ns): the
	// worker hands it, before each evaluation of an SLO whose processor
	// has Hooks.SetProbes, to that hook, so that those keys are judged on
	// the traffic since the half-open began. nil when there is none. Both
	// sides are pure functions of the records in order, so verdicts stay
	// deterministic across replays and restarts (the breaker's state,
	// probes included, is in the checkpoint).
	ProbesFor(slo string) map[schemas.Key]int64
	// StarvedProbes returns the half-open targets its probes cannot judge
	// (see processors.StarvedProbe): the keyed stage logs each one once,
	// WARN, when it begins and INFO when it ends, and counts them per SLO
	// (Keyed.StarvedTargets). nil when there is none.
	StarvedProbes() []processors.StarvedProbe
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
}

// Effects judges what every fuse command did (processors/effect): the
// worker hands it, after every evaluation boundary, the verdicts of the
// SLOs due there and the commands the breaker issued there, and puts the
// effect verdicts it returns among the worker's verdicts. Like the
// breaker it is pure and its state is in the checkpoint.
type Effects interface {
	Evaluate(nowUnixNano int64, verdicts []schemas.Verdict, commands []schemas.FuseCommand) []schemas.Verdict
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
}

// WorkerConfig is what every partition worker of one engine shares.
type WorkerConfig struct {
	// ConfigVersion identifies the configuration in the snapshot (the
	// state of each SLO is matched by its StateID, not by this).
	ConfigVersion string
	// BreakerStateID identifies the shape of the breaker's targets (their
	// dimensions): its state is restored only under the same id.
	BreakerStateID string
	KeyDims        KeyDims
	Guard          GuardConfig
	// AllowedLateness is how far behind the newest record of its own source
	// partition a record may be and still count. Default 30s.
	AllowedLateness time.Duration
	// LiveLag is how far behind the wall clock (the keyed record's Kafka
	// timestamp) a source's newest event time may be for the source to
	// count as live: only live sources advance the watermark of an
	// all-idle partition (see watermarks.silent). It must cover the
	// export delay of the tracing SDK and collector (OTel's batch span
	// processor: 5s, plus the collector's batching). Default (0): the
	// allowed lateness; the config sets allowed lateness + idle source
	// timeout.
	LiveLag time.Duration
	SLOs    []SLOSpec
	// NewBreaker makes the breaker of one partition worker; nil for none.
	NewBreaker func() (Breaker, error)
	// NewEffects makes the effect judge of one partition worker; nil for
	// none (it is used only with a breaker).
	NewEffects func() (Effects, error)
	// Summaries makes the worker write an evaluation summary
	// (schemas.EvalSummary) of every SLO at every boundary it evaluates
	// it, into Output.Summaries: the incident stage's input
	// (processors/incident). Off by default; nothing of the worker's state
	// or its other output depends on it.
	Summaries bool
	// AttributedSLOs names the SLOs whose fuse commands the incident
	// stage writes (a breaker rule's target: attributed; with
	// Summaries): the breaker's commands citing one of them (its
	// "slo:NAME" correlation id) that is due at the boundary go into that
	// SLO's summary (EvalSummary.Commands) instead of Output.Commands.
	// A command citing such an SLO at a boundary where it is not due (an
	// Advance refresh between the evaluations of a slower SLO) is
	// written as before.
	AttributedSLOs []string
	// CheckpointVersion is the format version MarshalBinary writes: 0 or
	// 5 (the current one), or 4, which the builds before the idle
	// durations read too (the idle durations are left out: a worker
	// restoring it starts them at 0, see RestoreWorker) — the first step
	// of a rolling upgrade (config compat.write_formats: previous). Every
	// version from 2 is read whatever it is.
	CheckpointVersion uint8
}

// WorkerStats counts what a worker did. Counters only grow.
type WorkerStats struct {
	Records, Duplicates, Heartbeats int64
	Spans, LateSpans                int64
	Corrections, LateCorrections    int64
	Evaluations, Verdicts, Commands int64
	// SkippedEvaluations counts evaluation boundaries passed without an
	// evaluation because no processor held any state (see jumpEmpty).
	SkippedEvaluations int64
	// IdleNotLive counts idle markers whose silence did not advance the
	// watermark because their source was not live: its newest event time
	// was more than WorkerConfig.LiveLag behind the wall clock (a
	// backfill, a replay, or an export delay beyond LiveLag). Not in the
	// checkpoint: it counts since the worker started.
	IdleNotLive int64
	Overflowed  [4]int64 // per dimension, Dimensions order
	// KeysOverflowed counts spans folded into OverflowKey by
	// GuardConfig.MaxKeys; LiveKeys is the keys admitted now.
	KeysOverflowed int64
	LiveKeys       int64
	Watermark      int64 // Unix ns, math.MinInt64 before known
}

// Worker is the deterministic core of one keyed partition: it owns the
// keyed state of every processor for the keys in the partition, the
// watermark, the cardinality guard and the breaker. It reads no clock and
// does no I/O: the same records in the same order give the same Output, bit
// for bit. It is not safe for concurrent use; the engine calls it from the
// partition's goroutine.
type Worker struct {
	cfg       WorkerConfig
	partition int32

	wm         *watermarks
	lastTopics string
	watermark  int64
	// earliest is where evaluations start: see startTime. It is fixed when
	// the watermark first becomes known.
	earliest int64
	guard    *guard
	slos     []sloState
	// late and countCorrections are the processors' Hooks.ObserveLate and
	// Hooks.CountCorrection, in SLO order, wired in NewWorker.
	late             []func(key schemas.Key, eventTime int64)
	countCorrections []func(key schemas.Key, timeUnixNano int64)
	breaker          Breaker
	effects          Effects

	nextOffset int64
	out        schemas.Output
	stats      WorkerStats
}

type sloState struct {
	spec SLOSpec
	proc processors.Processor
	// hooks are proc's Hooks, read once when it was created.
	hooks processors.Hooks
	// reporter is set on the first SLO whose processor has
	// Hooks.TakeJoined (a corrections SLO): the corrections it attributes
	// go to every Hooks.CountCorrection of the worker (the rollups), once.
	reporter bool
	// every is the processor's Interval in ns; next the next boundary to
	// evaluate, math.MinInt64 until the watermark is first known.
	every int64
	next  int64
	// emit collects what proc produces at one boundary (see evaluate).
	emit collector
}

// NewWorker returns an empty worker for the keyed partition.
func NewWorker(cfg WorkerConfig, partition int32) (*Worker, error) {
	if cfg.AllowedLateness < 0 {
		return nil, errors.New("engine: allowed lateness must not be negative")
	}
	if v := cfg.CheckpointVersion; v != 0 && v != snapshotFormatV4.Version && v != snapshotFormat.Version {
		return nil, fmt.Errorf("engine: checkpoint version %d: this fusebox writes %d or %d", v, snapshotFormatV4.Version, snapshotFormat.Version)
	}
	if cfg.LiveLag < 0 {
		return nil, errors.New("engine: live lag must not be negative")
	}
	w := &Worker{
		cfg:       cfg,
		partition: partition,
		wm:        newWatermarks(int64(cfg.AllowedLateness), int64(cfg.LiveLag)),
		watermark: math.MinInt64,
		earliest:  math.MaxInt64,
		guard:     newGuard(cfg.Guard, cfg.KeyDims),
	}
	haveReporter := false
	for _, spec := range cfg.SLOs {
		p, err := spec.New()
		if err != nil {
			return nil, fmt.Errorf("engine: SLO %q: %w", spec.Meta.SLO, err)
		}
		every := int64(p.Interval())
		if every <= 0 {
			return nil, fmt.Errorf("engine: SLO %q: processor interval must be positive", spec.Meta.SLO)
		}
		st := sloState{spec: spec, proc: p, hooks: p.Hooks(), every: every, next: math.MinInt64}
		if st.hooks.TakeJoined != nil && !haveReporter {
			st.reporter, haveReporter = true, true
		}
		if st.hooks.ObserveLate != nil {
			w.late = append(w.late, st.hooks.ObserveLate)
		}
		if st.hooks.CountCorrection != nil {
			w.countCorrections = append(w.countCorrections, st.hooks.CountCorrection)
		}
		w.slos = append(w.slos, st)
	}
	if cfg.NewBreaker != nil {
		b, err := cfg.NewBreaker()
		if err != nil {
			return nil, fmt.Errorf("engine: breaker: %w", err)
		}
		w.breaker = b
		if cfg.NewEffects != nil {
			e, err := cfg.NewEffects()
			if err != nil {
				return nil, fmt.Errorf("engine: effect: %w", err)
			}
			w.effects = e
		}
	}
	return w, nil
}

// NextOffset is the keyed offset after the last record applied: where a
// worker restored from this worker's snapshot continues.
func (w *Worker) NextOffset() int64 { return w.nextOffset }

// MinInterval is the shortest evaluation interval of the worker's SLOs
// (event time).
func (w *Worker) MinInterval() time.Duration {
	m := int64(math.MaxInt64)
	for i := range w.slos {
		m = min(m, w.slos[i].every)
	}
	if m == math.MaxInt64 {
		return time.Minute
	}
	return time.Duration(m)
}

// Stats returns the worker's counters.
func (w *Worker) Stats() WorkerStats {
	s := w.stats
	s.Overflowed = w.guard.overflowed()
	s.KeysOverflowed = w.guard.keysOverflowed
	s.LiveKeys = int64(w.guard.liveKeys())
	s.Watermark = w.watermark
	return s
}

// StarvedProbes returns the half-open targets whose probes are too few to
// judge them (see processors.StarvedProbe); nil without a breaker.
func (w *Worker) StarvedProbes() []processors.StarvedProbe {
	if w.breaker == nil {
		return nil
	}
	return w.breaker.StarvedProbes()
}

// TakeOutput returns what the worker produced since the last call and
// forgets it.
func (w *Worker) TakeOutput() schemas.Output {
	o := w.out
	w.out = schemas.Output{}
	return o
}

// Skip moves the worker past the keyed record at offset without applying
// it (a record of another deployment).
func (w *Worker) Skip(offset int64) { w.nextOffset = offset + 1 }

// Apply folds one keyed record in: duplicates (a router's replay) are
// skipped, late records counted and dropped, the rest handed to the SLOs
// they match; then the watermark advances and every evaluation boundary it
// passed is evaluated, in time order.
func (w *Worker) Apply(rec *KeyedRecord) {
	w.nextOffset = rec.Offset + 1
	w.stats.Records++
	if rec.SourceTopics != w.lastTopics {
		w.announce(rec.SourceTopics)
	}
	src := w.wm.source(sourceID{rec.Source.Topic, rec.Source.Partition})
	if rec.Idle {
		src.idle = true
		if w.wm.silent(src, rec) {
			w.stats.IdleNotLive++
		}
		w.advance()
		return
	}
	if rec.Source.Offset < src.lastOffset || (rec.Source.Offset == src.lastOffset && rec.Source.Part <= src.lastPart) {
		w.stats.Duplicates++
		return
	}
	src.lastOffset, src.lastPart = rec.Source.Offset, rec.Source.Part
	if src.idle && w.wm.allIdle() {
		// Every source was idle (every publisher paused) and this one is
		// back first. Were the others left idle, its backlog alone would
		// move the watermark and theirs would arrive late; wake them, so
		// that each holds the watermark at its own newest event time
		// until its records come or the router marks it idle again.
		w.wm.wakeAll()
	}
	src.idle, src.idleFor = false, 0
	if rec.Timestamp > 0 {
		src.lastAt = rec.Timestamp
	}
	if len(rec.Spans) == 0 && len(rec.Corrections) == 0 {
		w.stats.Heartbeats++
	}
	// The source's progress is updated before the records are folded in:
	// only advance reads it, and the records' lateness is judged against
	// the watermark as it was.
	if rec.SourceMaxEventTime > src.maxEventTime {
		src.maxEventTime = rec.SourceMaxEventTime
	}
	if src.firstMax == math.MinInt64 {
		src.firstMax = rec.SourceMaxEventTime
	}
	if w.watermark != math.MinInt64 {
		// Evaluate first the boundaries before this record's oldest event:
		// its records cannot be in those windows, so the verdicts are the
		// same, but when the watermark jumps far (a long gap, a backfill)
		// the old state drains and empty windows are jumped over (see
		// jumpEmpty) instead of being held open by the new records.
		if t := oldestEvent(rec); t != math.MaxInt64 {
			w.advanceTo(min(w.wm.current(), t-1))
		}
	}
	for i := range rec.Spans {
		w.span(&rec.Spans[i])
	}
	for i := range rec.Corrections {
		w.correction(&rec.Corrections[i])
	}
	w.advance()
}

// oldestEvent is the earliest event time among rec's spans and
// corrections, math.MaxInt64 when it has none.
func oldestEvent(rec *KeyedRecord) int64 {
	t := int64(math.MaxInt64)
	for i := range rec.Spans {
		t = min(t, rec.Spans[i].EndUnixNano)
	}
	for i := range rec.Corrections {
		t = min(t, rec.Corrections[i].TimeUnixNano)
	}
	return t
}

func (w *Worker) span(s *schemas.Span) {
	t := s.EndUnixNano
	key := w.guard.admit(w.cfg.KeyDims.Project(s.Key), t)
	if t < w.watermark {
		w.stats.LateSpans++
		for _, late := range w.late {
			late(key, t)
		}
		return
	}
	w.stats.Spans++
	for i := range w.slos {
		st := &w.slos[i]
		switch {
		case st.spec.Match.MatchesSpan(s):
			st.proc.ObserveSpan(key, s)
		case st.hooks.ObserveUnmatched != nil && in(st.spec.Match.Tenant, s.Key.Tenant):
			// Corrections index it so that a correction of it is not
			// joined to another span of the SLO (Hooks.ObserveUnmatched).
			st.hooks.ObserveUnmatched(key, s)
		}
	}
}

func (w *Worker) correction(c *schemas.Correction) {
	if c.TimeUnixNano < w.watermark {
		w.stats.LateCorrections++
		return
	}
	w.stats.Corrections++
	k := schemas.Key{Tenant: c.Tenant, Model: c.Model, Variant: c.Variant}
	for i := range w.slos {
		m := &w.slos[i].spec.Match
		// A correction names at most tenant, model and variant; the
		// processor joins it to a span and applies the rest of the match.
		if in(m.Tenant, k.Tenant) {
			w.slos[i].proc.ObserveCorrection(c)
		}
	}
}

// announce records the source topics' partition counts from the header
// "topic:n,topic:n".
func (w *Worker) announce(h string) {
	w.lastTopics = h
	if h == "" {
		return
	}
	parts := map[string]int32{}
	for _, f := range strings.Split(h, ",") {
		topic, n, ok := strings.Cut(f, ":")
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(n, 10, 32)
		if err != nil || v < 0 {
			continue
		}
		parts[topic] = int32(v)
	}
	w.wm.partitions = parts
}

// advance recomputes the watermark and evaluates every boundary it passed.
func (w *Worker) advance() { w.advanceTo(w.wm.current()) }

// advanceTo moves the watermark to wm, if that is ahead, and evaluates
// every boundary it passed.
func (w *Worker) advanceTo(wm int64) {
	if wm <= w.watermark {
		return
	}
	w.watermark = wm
	if w.earliest == math.MaxInt64 {
		w.earliest = min(wm, w.wm.start())
	}
	for i := range w.slos {
		s := &w.slos[i]
		if s.next == math.MinInt64 {
			s.next = floorDiv(w.earliest, s.every)*s.every + s.every
		}
	}
	for {
		b := int64(math.MaxInt64)
		for i := range w.slos {
			b = min(b, w.slos[i].next)
		}
		if b > wm || b == math.MaxInt64 {
			return
		}
		if w.jumpEmpty(wm) {
			continue
		}
		w.evaluate(b)
	}
}

// jumpEmpty moves every SLO's next boundary to its last boundary at or
// before wm when no processor holds any state: the evaluations in between
// would judge empty windows and emit nothing, and stepping through them
// one by one after a long idle gap or a backfill (a year is 525,600
// one-minute boundaries) would pin the worker. The last boundary is still
// evaluated, so the breaker advances to it. It reports whether anything
// moved. The decision depends only on the worker's state, so replays jump
// alike.
func (w *Worker) jumpEmpty(wm int64) bool {
	for i := range w.slos {
		if w.slos[i].proc.Keys() > 0 {
			return false
		}
		if p := w.slos[i].hooks.Pending; p != nil && p() {
			return false
		}
	}
	moved := false
	for i := range w.slos {
		s := &w.slos[i]
		if last := floorDiv(wm, s.every) * s.every; last > s.next {
			w.stats.SkippedEvaluations += (last - s.next) / s.every
			s.next, moved = last, true
		}
	}
	return moved
}

// evaluate runs every SLO due at boundary b, then the breaker. The SLOs
// whose processor has Hooks.TakeJoined (corrections) are evaluated first,
// so that the corrections they attribute at b are counted
// (Hooks.CountCorrection) before the rollups of b are evaluated, wherever
// the rollup SLO is in the list; the output still lists every SLO's
// verdicts and rollups in SLO order. Evaluating some SLOs first changes
// nothing else: a processor reads only its own state, and the probes come
// from the breaker, which sees the verdicts only after every SLO due at b
// was evaluated.
func (w *Worker) evaluate(b int64) {
	for i := range w.slos {
		if s := &w.slos[i]; s.next == b && s.hooks.TakeJoined != nil {
			w.evaluateSLO(s, b)
		}
	}
	for i := range w.slos {
		if s := &w.slos[i]; s.next == b && s.hooks.TakeJoined == nil {
			w.evaluateSLO(s, b)
		}
	}
	var verdicts []schemas.Verdict
	var due []sloSpan
	for i := range w.slos {
		s := &w.slos[i]
		if s.next != b {
			continue
		}
		due = append(due, sloSpan{s, len(verdicts), len(verdicts) + len(s.emit.verdicts)})
		// Processors emit in key order already; sorting again makes the
		// order a property of the engine, not of every processor.
		slices.SortStableFunc(s.emit.verdicts, compareVerdicts)
		slices.SortStableFunc(s.emit.rollups, compareRollups)
		verdicts = append(verdicts, s.emit.verdicts...)
		w.out.Rollups = append(w.out.Rollups, s.emit.rollups...)
		s.emit.reset()
		s.next = b + s.every
	}
	w.stats.Verdicts += int64(len(verdicts))
	w.out.Verdicts = append(w.out.Verdicts, verdicts...)
	first := len(w.out.Commands)
	if w.breaker != nil {
		for i := range verdicts {
			w.commands(w.breaker.Observe(verdicts[i]))
		}
		w.commands(w.breaker.Advance(b))
	}
	if w.cfg.Summaries {
		// Before the effect judge: the commands of attributed SLOs go to
		// the incident stage, which judges the commands it writes.
		w.summaries(b, due, verdicts, first)
	}
	if w.breaker != nil && w.effects != nil {
		// Effect verdicts are not SLO verdicts: the breaker never
		// sees them, and Stats.Verdicts does not count them.
		w.out.Verdicts = append(w.out.Verdicts, w.effects.Evaluate(b, verdicts, w.out.Commands[first:])...)
	}
	w.guard.expire(b)
}

// sloSpan is one SLO due at a boundary and its verdicts' range in the
// boundary's verdicts.
type sloSpan struct {
	s        *sloState
	from, to int
}

// evaluateSLO evaluates s at boundary b into s.emit, with the breaker's
// probes of s first and the corrections s attributed relayed after.
func (w *Worker) evaluateSLO(s *sloState, b int64) {
	s.emit.reset()
	if set := s.hooks.SetProbes; set != nil && w.breaker != nil {
		set(w.breaker.ProbesFor(s.spec.Meta.SLO))
	}
	s.proc.Evaluate(b, &s.emit)
	w.stats.Evaluations++
	if s.hooks.TakeJoined == nil {
		return
	}
	joined := s.hooks.TakeJoined()
	if !s.reporter {
		return // a second corrections SLO: counted by the first only
	}
	for _, j := range joined {
		for _, count := range w.countCorrections {
			count(j.Key, j.TimeUnixNano)
		}
	}
}

func (w *Worker) commands(cmds []schemas.FuseCommand) {
	w.stats.Commands += int64(len(cmds))
	w.out.Commands = append(w.out.Commands, cmds...)
}

func compareVerdicts(a, b schemas.Verdict) int {
	if c := strings.Compare(a.Key.String(), b.Key.String()); c != 0 {
		return c
	}
	return strings.Compare(a.Metric, b.Metric)
}

func compareRollups(a, b schemas.Rollup) int {
	if c := strings.Compare(a.Key.String(), b.Key.String()); c != 0 {
		return c
	}
	switch {
	case a.MinuteUnixNano < b.MinuteUnixNano:
		return -1
	case a.MinuteUnixNano > b.MinuteUnixNano:
		return 1
	}
	return 0
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// collector is the Emitter handed to processors.
type collector struct {
	verdicts []schemas.Verdict
	rollups  []schemas.Rollup
}

// reset empties the collector, keeping its arrays but not what they
// pointed to: the verdicts' details and evidence and the rollups' latency
// arrays have been copied into the output by then, and a stale copy here
// kept them alive until the next evaluation overwrote it.
func (c *collector) reset() {
	clear(c.verdicts)
	clear(c.rollups)
	c.verdicts = c.verdicts[:0]
	c.rollups = c.rollups[:0]
}

func (c *collector) Verdict(v schemas.Verdict) { c.verdicts = append(c.verdicts, v) }
func (c *collector) Rollup(r schemas.Rollup)   { c.rollups = append(c.rollups, r) }
