package counter

import (
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

// MetricCalls is the verdict metric.
const MetricCalls = "calls"

// Processor counts calls per key. It implements processors.Processor.
type Processor struct {
	meta  processors.Meta
	cfg   Config
	keys  map[schemas.Key]*count
	order processors.KeyOrder
}

// count is one key's state.
type count struct {
	Total  int64 // calls since the start, snapshots included
	Recent int64 // calls since the last evaluation
}

// New builds a counter for meta's SLO; it fails when cfg is invalid.
func New(meta processors.Meta, cfg Config) (*Processor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Processor{meta: meta, cfg: cfg, keys: map[schemas.Key]*count{}}, nil
}

// Interval is Every.
func (p *Processor) Interval() time.Duration { return p.cfg.Every }

// ObserveSpan counts one call of key.
func (p *Processor) ObserveSpan(key schemas.Key, _ *schemas.Span) {
	c := p.keys[key]
	if c == nil {
		c = &count{}
		p.keys[key] = c
	}
	c.Total++
	c.Recent++
}

// ObserveCorrection ignores corrections.
func (p *Processor) ObserveCorrection(*schemas.Correction) {}

// Evaluate emits one verdict per key that has calls, in key order: ok, or
// breach when the interval's calls exceed Limit.
func (p *Processor) Evaluate(now int64, emit processors.Emitter) {
	for _, k := range processors.SortedKeys(p.keys, &p.order) {
		c := p.keys[k]
		v := p.meta.NewVerdict(Name, MetricCalls, k, now-int64(p.cfg.Every), now)
		v.Value, v.Threshold, v.N, v.Method = float64(c.Total), float64(p.cfg.Limit), c.Recent, "count"
		v.Status = schemas.StatusOK
		if c.Recent > p.cfg.Limit {
			v.Status = schemas.StatusBreach
		}
		c.Recent = 0
		emit.Verdict(v)
	}
}

// Keys is the number of keys counted.
func (p *Processor) Keys() int { return len(p.keys) }

// Hooks is empty: the counter relays nothing to other processors.
func (p *Processor) Hooks() processors.Hooks { return processors.Hooks{} }
