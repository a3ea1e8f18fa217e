// Package kafkasink writes verdicts to the fusebox.verdicts topic and fuse
// commands to the compacted fusebox.fuse topic with an idempotent franz-go
// producer.
//
// Records: a verdict's key is "processor/tenant/service/model/variant" and
// its value the stable JSON of sinks.MarshalVerdictJSON; a command's key is
// its target (schemas.Key.String) and its value the command's canonical JSON
// (schemas.FuseCommand.AppendJSON, the same bytes json.Marshal gives). Both
// carry a header "fusebox-schema" naming the encoding.
//
// Ordering: a fuse command becomes visible only after every verdict written
// before it is acknowledged by the broker. The sink groups writes into
// epochs: an epoch closes when a Write carries commands (or on Flush); its
// commands are produced once all verdicts of that and earlier epochs are
// acknowledged, and the next epoch's commands wait until these are
// acknowledged too, so commands of one target keep their version order.
//
// Failures: franz-go retries requests internally without limit; a record it
// finally gives up on (unknown topic after retries, authorisation, too
// large) is produced again after a capped exponential backoff — never
// dropped — and counted in Metrics. Flush returns nil only when everything
// written before it is acknowledged; while that cannot happen it blocks
// until its context ends and returns the last delivery error.
package kafkasink

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks"
)

// FuseCommandJSONVersion names the encoding of fuse command values (the
// canonical JSON of package schemas).
const FuseCommandJSONVersion = "fusebox.fuse_command.v1"

// SchemaHeader is the record header naming the value's encoding.
const SchemaHeader = "fusebox-schema"

// Sink is the Kafka sink; it implements engine.Sink and sinks.MetricsSource.
type Sink struct {
	cfg     Config
	cl      *kgo.Client
	backoff sinks.Backoff

	// slots holds one token per record written and not yet acknowledged;
	// its capacity, MaxPendingRecords, is the memory bound.
	slots chan struct{}

	mu        sync.Mutex
	epochs    []*epoch // FIFO of unfinished epochs; the last one is open
	nextSeq   uint64
	changed   chan struct{} // closed and replaced whenever an epoch finishes
	closing   bool
	closingCh chan struct{} // closed by Close: wakes Writes blocked on slots
	stopped   bool          // the client is closing: retries are abandoned
	stopCh    chan struct{}
	lastErr   error
	streak    int // consecutive delivery failures, for the backoff
	abandoned int // records given up on at Close

	verdictsOut, commandsOut   atomic.Uint64
	verdictErrs, commandErrs   atomic.Uint64
	verdictRetry, commandRetry atomic.Uint64
}

// epoch is a run of verdicts followed by the commands that must wait for
// them.
type epoch struct {
	seq         uint64
	pending     int  // verdicts produced and not yet acknowledged
	closed      bool // no further verdicts join this epoch
	cmds        []*kgo.Record
	cmdsStarted bool
	cmdsDone    bool
	promise     func(*kgo.Record, error)
}

// New connects to the brokers, creates the topics when configured to, checks
// that the fuse topic is compacted, and returns a running sink. opts are
// extra franz-go options (TLS, SASL, client id, linger); options that would
// break the delivery guarantees (disabling idempotent writes, a
// transactional id) are rejected.
func New(ctx context.Context, cfg Config, opts ...kgo.Opt) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID("fusebox-sink"),
		// The sink's own slots bound what is buffered; keep franz-go's bound
		// just above so a retried record never blocks inside a promise.
		kgo.MaxBufferedRecords(cfg.MaxPendingRecords + 1),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafkasink: client: %w", err)
	}
	if v, _ := cl.OptValue(kgo.DisableIdempotentWrite).(bool); v {
		cl.Close()
		return nil, &ConfigError{Field: "opts", Reason: "kgo.DisableIdempotentWrite is not allowed: the sink relies on the idempotent producer"}
	}
	if id, _ := cl.OptValue(kgo.TransactionalID).(string); id != "" {
		cl.Close()
		return nil, &ConfigError{Field: "opts", Reason: "kgo.TransactionalID is not supported"}
	}
	actx, cancel := context.WithTimeout(ctx, cfg.AdminTimeout)
	defer cancel()
	if err := ensureTopics(actx, cl, &cfg); err != nil {
		cl.Close()
		return nil, err
	}
	s := &Sink{
		cfg:       cfg,
		cl:        cl,
		backoff:   sinks.Backoff{Min: cfg.RetryBackoffMin, Max: cfg.RetryBackoffMax},
		slots:     make(chan struct{}, cfg.MaxPendingRecords),
		changed:   make(chan struct{}),
		closingCh: make(chan struct{}),
		stopCh:    make(chan struct{}),
	}
	s.epochs = []*epoch{s.newEpoch()}
	return s, nil
}

// Client returns the underlying franz-go client (for metrics hooks or
// tests); do not produce through it.
func (s *Sink) Client() *kgo.Client { return s.cl }

func (s *Sink) newEpoch() *epoch {
	e := &epoch{seq: s.nextSeq}
	s.nextSeq++
	e.promise = func(r *kgo.Record, err error) { s.verdictDone(e, r, err) }
	return e
}

var (
	verdictHeader  = []kgo.RecordHeader{{Key: SchemaHeader, Value: []byte(sinks.VerdictJSONVersion)}}
	commandHeader  = []kgo.RecordHeader{{Key: SchemaHeader, Value: []byte(FuseCommandJSONVersion)}}
	incidentHeader = []kgo.RecordHeader{{Key: SchemaHeader, Value: []byte(sinks.IncidentJSONVersion)}}
)

// Write encodes out's verdicts and commands and hands them to the producer.
// Verdicts are produced at once; commands are held until every verdict
// written before them is acknowledged. Write blocks while MaxPendingRecords
// records are unacknowledged. A verdict that fails Validate or a command
// that fails to encode makes Write return an error (wrapping
// schemas.ErrInvalid where Validate said so) before anything of out is
// written. Rollups are not written to Kafka.
func (s *Sink) Write(ctx context.Context, out schemas.Output) error {
	if s.isClosing() {
		return sinks.ErrClosed
	}
	vrecs := make([]*kgo.Record, len(out.Verdicts))
	for i := range out.Verdicts {
		v := &out.Verdicts[i]
		val, err := sinks.MarshalVerdictJSON(nil, v)
		if err != nil {
			return fmt.Errorf("kafkasink: verdicts[%d] (id %q): %w", i, v.ID, err)
		}
		vrecs[i] = &kgo.Record{Topic: s.cfg.VerdictTopic, Key: []byte(sinks.VerdictRecordKey(v)), Value: val, Headers: verdictHeader}
	}
	if s.cfg.IncidentTopic != "" {
		for i := range out.Incidents {
			inc := &out.Incidents[i]
			val, err := sinks.MarshalIncidentJSON(nil, inc)
			if err != nil {
				return fmt.Errorf("kafkasink: incidents[%d] (id %q): %w", i, inc.ID, err)
			}
			// With the verdicts: acknowledged before the commands citing them.
			vrecs = append(vrecs, &kgo.Record{Topic: s.cfg.IncidentTopic, Key: []byte(inc.IncidentID), Value: val, Headers: incidentHeader})
		}
	}
	crecs := make([]*kgo.Record, len(out.Commands))
	for i := range out.Commands {
		c := &out.Commands[i]
		val, err := c.AppendJSON(nil) // the canonical form json.Marshal also gives
		if err != nil {
			return fmt.Errorf("kafkasink: commands[%d] (target %s, version %d): %w", i, c.Target.String(), c.Version, err)
		}
		crecs[i] = &kgo.Record{Topic: s.cfg.FuseTopic, Key: []byte(c.Target.String()), Value: val, Headers: commandHeader}
	}

	for _, r := range vrecs {
		if err := s.acquire(ctx, 1); err != nil {
			return err
		}
		s.mu.Lock()
		e := s.epochs[len(s.epochs)-1]
		e.pending++
		s.mu.Unlock()
		// context.Background: once buffered, a record must not be cancelled
		// by the caller's context; the slot guarantees Produce does not block.
		s.cl.Produce(context.Background(), r, e.promise)
	}
	if len(crecs) == 0 {
		return nil
	}
	if err := s.acquire(ctx, len(crecs)); err != nil {
		return err
	}
	s.mu.Lock()
	e := s.epochs[len(s.epochs)-1]
	e.cmds = crecs
	e.closed = true
	s.epochs = append(s.epochs, s.newEpoch())
	s.advanceLocked()
	s.mu.Unlock()
	return nil
}

// acquire takes n slots, blocking while the sink is full. On failure it
// gives back what it took.
func (s *Sink) acquire(ctx context.Context, n int) error {
	for i := 0; i < n; i++ {
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			s.release(i)
			return ctx.Err()
		case <-s.closingCh:
			s.release(i)
			return sinks.ErrClosed
		}
	}
	return nil
}

func (s *Sink) release(n int) {
	for i := 0; i < n; i++ {
		<-s.slots
	}
}

func (s *Sink) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// verdictDone is the promise of every verdict record. It must not block:
// franz-go calls promises serially.
func (s *Sink) verdictDone(e *epoch, r *kgo.Record, err error) {
	if err == nil {
		s.verdictsOut.Add(1)
		s.release(1)
		s.mu.Lock()
		s.streak = 0
		e.pending--
		if e.pending == 0 {
			s.advanceLocked()
		}
		s.mu.Unlock()
		return
	}
	s.verdictErrs.Add(1)
	s.mu.Lock()
	s.lastErr = fmt.Errorf("verdict record key %q: %w", r.Key, err)
	attempt := s.streak
	s.streak++
	if s.stopped {
		s.abandoned++
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	retry := &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers}
	// A goroutine (via the timer) produces again: producing inside a promise
	// could deadlock the client.
	go func() {
		if !s.backoff.Sleep(context.Background(), s.stopCh, attempt) {
			s.mu.Lock()
			s.abandoned++
			s.mu.Unlock()
			return
		}
		s.verdictRetry.Add(1)
		s.cl.Produce(context.Background(), retry, e.promise)
	}()
}

// advanceLocked finishes epochs from the head: an epoch is done when it is
// closed, all its verdicts are acknowledged, and its commands (if any) are
// acknowledged. It starts the head's commands once its verdicts are done.
// Called with s.mu held.
func (s *Sink) advanceLocked() {
	popped := false
	for len(s.epochs) > 1 || (len(s.epochs) == 1 && s.epochs[0].closed) {
		h := s.epochs[0]
		if !h.closed || h.pending > 0 {
			break
		}
		if len(h.cmds) > 0 && !h.cmdsDone {
			if !h.cmdsStarted {
				h.cmdsStarted = true
				go s.produceCommands(h)
			}
			break
		}
		s.epochs = s.epochs[1:]
		popped = true
	}
	if len(s.epochs) == 0 {
		s.epochs = append(s.epochs, s.newEpoch())
	}
	if popped {
		close(s.changed)
		s.changed = make(chan struct{})
	}
}

// produceCommands produces one epoch's commands and waits for all of them,
// producing the failed ones again (in their original order) after a
// backoff. franz-go fails every later buffered record of a partition with
// the one it gives up on, so the failures are a suffix per partition and
// producing them again in order keeps each target's versions in order.
func (s *Sink) produceCommands(e *epoch) {
	pending := e.cmds
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt > 0 {
			if !s.backoff.Sleep(context.Background(), s.stopCh, attempt-1) {
				s.mu.Lock()
				s.abandoned += len(pending)
				s.mu.Unlock()
				return
			}
			s.commandRetry.Add(uint64(len(pending)))
		}
		errs := make([]error, len(pending))
		var wg sync.WaitGroup
		wg.Add(len(pending))
		for i, r := range pending {
			rec := r
			if attempt > 0 {
				rec = &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers}
			}
			s.cl.Produce(context.Background(), rec, func(_ *kgo.Record, err error) {
				errs[i] = err
				wg.Done()
			})
		}
		wg.Wait()
		var failed []*kgo.Record
		for i, err := range errs {
			if err == nil {
				s.commandsOut.Add(1)
				s.release(1)
				continue
			}
			s.commandErrs.Add(1)
			s.mu.Lock()
			s.lastErr = fmt.Errorf("fuse command record key %q: %w", pending[i].Key, err)
			s.mu.Unlock()
			failed = append(failed, pending[i])
		}
		pending = failed
	}
	s.mu.Lock()
	e.cmdsDone = true
	s.advanceLocked()
	s.mu.Unlock()
}

// Flush returns nil once every record written before the call is
// acknowledged by the broker (commands included). When ctx ends first it
// returns an error wrapping ctx.Err() that names how many records are
// pending and the last delivery error.
func (s *Sink) Flush(ctx context.Context) error {
	if s.isClosing() {
		return sinks.ErrClosed
	}
	return s.flush(ctx)
}

func (s *Sink) flush(ctx context.Context) error {
	s.mu.Lock()
	tail := s.epochs[len(s.epochs)-1]
	target := tail.seq
	if tail.pending == 0 && len(tail.cmds) == 0 {
		// Nothing in the open epoch: wait only for the ones before it.
		if len(s.epochs) == 1 {
			s.mu.Unlock()
			return nil
		}
		target = tail.seq - 1
	} else {
		tail.closed = true
		s.epochs = append(s.epochs, s.newEpoch())
		s.advanceLocked()
	}
	for {
		if s.epochs[0].seq > target {
			s.mu.Unlock()
			return nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			s.mu.Lock()
			last := s.lastErr
			s.mu.Unlock()
			return &sinks.FlushError{Sink: "kafkasink", Pending: len(s.slots), Missing: "records not acknowledged", Op: "delivery", LastErr: last, Err: ctx.Err()}
		}
		s.mu.Lock()
	}
}

// Close stops accepting writes, flushes until ctx ends, then closes the
// client. Records still unacknowledged then are abandoned and reported in
// the error (they were never acknowledged upstream, so the engine replays
// them). Calling Close again returns nil.
func (s *Sink) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	close(s.closingCh)
	s.mu.Unlock()
	err := s.flush(ctx)
	s.mu.Lock()
	s.stopped = true
	close(s.stopCh)
	s.mu.Unlock()
	s.cl.Close()
	return err
}

// Metrics reports records written and errors per topic, retries and the
// number of records pending.
func (s *Sink) Metrics() []sinks.Metric {
	vt := []sinks.Label{{Name: "sink", Value: "kafka"}, {Name: "topic", Value: s.cfg.VerdictTopic}}
	ft := []sinks.Label{{Name: "sink", Value: "kafka"}, {Name: "topic", Value: s.cfg.FuseTopic}}
	const (
		recHelp   = "Records acknowledged by the broker."
		errHelp   = "Delivery failures (each failed record is produced again)."
		retryHelp = "Records produced again after a delivery failure."
	)
	return []sinks.Metric{
		{Name: "fusebox_sink_records_total", Help: recHelp, Kind: sinks.Counter, Labels: vt, Value: float64(s.verdictsOut.Load())},
		{Name: "fusebox_sink_records_total", Help: recHelp, Kind: sinks.Counter, Labels: ft, Value: float64(s.commandsOut.Load())},
		{Name: "fusebox_sink_errors_total", Help: errHelp, Kind: sinks.Counter, Labels: vt, Value: float64(s.verdictErrs.Load())},
		{Name: "fusebox_sink_errors_total", Help: errHelp, Kind: sinks.Counter, Labels: ft, Value: float64(s.commandErrs.Load())},
		{Name: "fusebox_sink_retries_total", Help: retryHelp, Kind: sinks.Counter, Labels: vt, Value: float64(s.verdictRetry.Load())},
		{Name: "fusebox_sink_retries_total", Help: retryHelp, Kind: sinks.Counter, Labels: ft, Value: float64(s.commandRetry.Load())},
		{Name: "fusebox_sink_pending_records", Help: "Records written and not yet acknowledged.", Kind: sinks.Gauge,
			Labels: []sinks.Label{{Name: "sink", Value: "kafka"}}, Value: float64(len(s.slots))},
	}
}

var _ sinks.MetricsSource = (*Sink)(nil)

// PublishFuseRecord writes one record to the fuse topic with the given key
// and value, as Write does for a command (same topic, header and
// partitioner: a record key lands on the partition compaction judges it
// in), and waits for the broker's acknowledgement. fusebox's fuse.Guard
// uses it to re-publish a target's current command.
func (s *Sink) PublishFuseRecord(ctx context.Context, key, value []byte) error {
	if s.isClosing() {
		return sinks.ErrClosed
	}
	r := &kgo.Record{Topic: s.cfg.FuseTopic, Key: key, Value: value, Headers: commandHeader}
	return s.cl.ProduceSync(ctx, r).FirstErr()
}
