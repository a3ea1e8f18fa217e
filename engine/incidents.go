package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/fusebox-dev/fusebox/ingest/batch"
	"github.com/fusebox-dev/fusebox/schemas"
)

// IncidentStage is the incident stage of one partition of the summaries
// topic (processors/incident.Stage): it takes the workers' evaluation
// summaries and answers with incident records and fuse commands. Like the
// workers it is pure; its state is in its snapshot.
type IncidentStage interface {
	Add(s schemas.EvalSummary) (schemas.Output, error)
	// Lagging returns (and forgets) one line per boundary decided without
	// a lagging keyed partition since the last call, for a WARN.
	Lagging() []string
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
}

// IncidentsConfig configures the incident stage's runner.
type IncidentsConfig struct {
	// New makes the stage of one summaries partition.
	New func() (IncidentStage, error)
	// Store keeps one checkpoint per summaries partition (a namespace of
	// the keyed stage's store: statestore.Store.Namespace).
	Store StateStore
	// Sinks receive the incident records and the (signed) commands.
	Sinks  []Sink
	Signer Signer
	// CheckpointEvery is how often (wall time) a partition flushes the
	// sinks, saves the stage's snapshot and acknowledges its input.
	// Default 10s.
	CheckpointEvery time.Duration
	Logger          *slog.Logger
}

// Incidents runs an IncidentStage per assigned partition of the summaries
// topic: its Handler is the ingest.HandlerFactory for that topic; the
// records' Payload is a *schemas.EvalSummary (SummaryDecoder). Its
// checkpoints follow the keyed stage's order: flush the sinks, save the
// snapshot, then acknowledge.
type Incidents struct {
	cfg         IncidentsConfig
	mu          sync.Mutex
	summaries   int64
	checkpoints int64
	partial     int64
}

// NewIncidents returns the runner.
func NewIncidents(cfg IncidentsConfig) (*Incidents, error) {
	if cfg.New == nil || cfg.Store == nil {
		return nil, fmt.Errorf("engine: incidents need New and Store")
	}
	if cfg.CheckpointEvery <= 0 {
		cfg.CheckpointEvery = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Incidents{cfg: cfg}, nil
}

// Counts returns the summaries applied and the checkpoints taken.
func (in *Incidents) Counts() (summaries, checkpoints int64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.summaries, in.checkpoints
}

// Partial returns how many boundaries the stages decided without a
// lagging keyed partition (IncidentStage.Lagging's lines): each is also a
// WARN naming the partitions.
func (in *Incidents) Partial() int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.partial
}

// SummaryDecoder is the batch.Decoder of the summaries topic.
var SummaryDecoder batch.Decoder = batch.DecoderFunc(func(_ int64, _ []batch.Header, value []byte, out *batch.Record) error {
	s := &schemas.EvalSummary{}
	if err := schemas.UnmarshalSummaryJSON(value, s); err != nil {
		return fmt.Errorf("engine: summary record: %w", err)
	}
	out.Payload = s
	return nil
})

// Handler is the ingest.HandlerFactory of the summaries topic.
func (in *Incidents) Handler(topic string, partition int32) batch.PartitionHandler {
	return &incidentPartition{in: in, partition: partition}
}

type incidentPartition struct {
	in        *Incidents
	partition int32
	st        IncidentStage
	pending   []*batch.Batch
	last      time.Time
}

// Start restores the partition's checkpoint and starts after the offset
// it covers: the offset is kept with the snapshot (the stage drops the
// summaries it has seen, so starting at the group's committed offset
// would do too; the checkpoint's is exact).
func (p *incidentPartition) Start(ctx context.Context, committed int64) (int64, error) {
	st, err := p.in.cfg.New()
	if err != nil {
		return 0, err
	}
	p.st, p.last = st, time.Now()
	snap, found, err := p.in.cfg.Store.Load(ctx, p.partition)
	if err != nil {
		return 0, fmt.Errorf("engine: load incident checkpoint of partition %d: %w", p.partition, err)
	}
	if !found {
		return -1, nil
	}
	next, body, err := splitOffset(snap)
	if err == nil {
		err = st.UnmarshalBinary(body)
	}
	if err != nil {
		// The stage's state is derived from summaries (a changed
		// topics.keyed_partitions, an unreadable checkpoint): it starts
		// empty from the committed offset rather than not at all; incidents
		// open then reopen under new ids.
		p.in.cfg.Logger.Warn("incident checkpoint not restored: the stage starts empty (open incidents reopen under new ids)",
			"partition", p.partition, "bytes", len(snap), "err", err)
		if p.st, err = p.in.cfg.New(); err != nil {
			return 0, err
		}
		return -1, nil
	}
	p.in.cfg.Logger.Info("restored incident checkpoint", "partition", p.partition, "next_offset", next, "bytes", len(snap))
	return next, nil
}

// Handle adds the batch's summaries and writes what the stage decides.
func (p *incidentPartition) Handle(ctx context.Context, b *batch.Batch) error {
	var out schemas.Output
	n := 0
	for i := range b.Records {
		s, ok := b.Records[i].Payload.(*schemas.EvalSummary)
		if !ok {
			continue
		}
		o, err := p.st.Add(*s)
		if err != nil {
			// A summary of a partition beyond the stage's count: the
			// keyed topic grew; logged and dropped, not fatal.
			p.in.cfg.Logger.Warn("summary dropped", "partition", p.partition, "offset", b.Records[i].Offset, "err", err)
		}
		out.Incidents = append(out.Incidents, o.Incidents...)
		out.Commands = append(out.Commands, o.Commands...)
		out.Verdicts = append(out.Verdicts, o.Verdicts...)
		lagging := p.st.Lagging()
		if len(lagging) > 0 {
			p.in.mu.Lock()
			p.in.partial += int64(len(lagging))
			p.in.mu.Unlock()
		}
		for _, l := range lagging {
			p.in.cfg.Logger.Warn("incident stage: "+l+"; their commands and keys come late (a stuck or restoring worker, or a process whose SLO file has no incidents)",
				"partition", p.partition)
		}
		b.Records[i].Payload = nil
		n++
	}
	p.in.mu.Lock()
	p.in.summaries += int64(n)
	p.in.mu.Unlock()
	p.pending = append(p.pending, b)
	if !out.Empty() {
		if p.in.cfg.Signer != nil {
			if err := p.in.cfg.Signer.SignAll(out.Commands); err != nil {
				return fmt.Errorf("engine: %w", err)
			}
		}
		for _, s := range p.in.cfg.Sinks {
			if err := s.Write(ctx, out); err != nil {
				return p.soft(ctx, fmt.Errorf("engine: sink write: %w", err))
			}
		}
	}
	if time.Since(p.last) >= p.in.cfg.CheckpointEvery {
		return p.soft(ctx, p.checkpoint(ctx))
	}
	return nil
}

func (p *incidentPartition) soft(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (p *incidentPartition) checkpoint(ctx context.Context) error {
	if len(p.pending) == 0 {
		p.last = time.Now()
		return nil
	}
	for _, s := range p.in.cfg.Sinks {
		if err := s.Flush(ctx); err != nil {
			return fmt.Errorf("engine: sink flush: %w", err)
		}
	}
	body, err := p.st.MarshalBinary()
	if err != nil {
		return err
	}
	next := p.pending[len(p.pending)-1].NextOffset
	if err := p.in.cfg.Store.Save(ctx, p.partition, joinOffset(next, body)); err != nil {
		return err
	}
	for _, b := range p.pending {
		b.Ack()
	}
	clear(p.pending)
	p.pending = p.pending[:0]
	p.last = time.Now()
	p.in.mu.Lock()
	p.in.checkpoints++
	p.in.mu.Unlock()
	return nil
}

// Close checkpoints what the partition did (not when lost).
func (p *incidentPartition) Close(ctx context.Context, reason batch.CloseReason) {
	if p.st == nil || reason == batch.CloseLost {
		return
	}
	if err := p.checkpoint(ctx); err != nil {
		p.in.cfg.Logger.Warn("incident checkpoint on close failed: the next owner replays from the previous one", "partition", p.partition, "err", err)
	}
}

// Idle checkpoints a quiet partition once CheckpointEvery has passed.
func (p *incidentPartition) Idle(ctx context.Context) error {
	if p.st == nil || len(p.pending) == 0 || time.Since(p.last) < p.in.cfg.CheckpointEvery {
		return nil
	}
	return p.soft(ctx, p.checkpoint(ctx))
}

var _ batch.Idler = (*incidentPartition)(nil)

// joinOffset prefixes the stage's snapshot with the next offset (8 bytes,
// big-endian).
func joinOffset(next int64, body []byte) []byte {
	b := make([]byte, 8, 8+len(body))
	for i := 0; i < 8; i++ {
		b[i] = byte(uint64(next) >> (56 - 8*i))
	}
	return append(b, body...)
}

func splitOffset(b []byte) (int64, []byte, error) {
	if len(b) < 8 {
		return 0, nil, fmt.Errorf("checkpoint of %d bytes", len(b))
	}
	var n uint64
	for i := 0; i < 8; i++ {
		n = n<<8 | uint64(b[i])
	}
	return int64(n), b[8:], nil
}
