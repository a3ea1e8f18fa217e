package engine

import (
	"slices"

	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"github.com/fusebox-dev/fusebox/schemas"
)

// Overflow is the value a dimension takes once its cardinality limit is
// reached: new tenants (or services, models, variants) beyond the limit are
// pooled under it instead of each getting state of their own.
const Overflow = "__overflow__"

// GuardConfig bounds the number of distinct values per dimension that one
// partition worker keeps state for. 0 means no limit for that dimension.
// The defaults are the configuration file's (keys.max_tenants, ...; see
// internal/config), not repeated here.
type GuardConfig struct {
	MaxTenants  int
	MaxServices int
	MaxModels   int
	MaxVariants int
	// IdleTTLNanos forgets a value not seen for this long (event time), so
	// that its slot can go to a new value. 0: never.
	IdleTTLNanos int64
}

// guard is the cardinality guard of one partition worker. It is part of the
// worker's deterministic state: which values are admitted depends only on
// the order of on-time records.
type guard struct {
	cfg  GuardConfig
	dims [4]dimGuard
}

type dimGuard struct {
	limit int
	// seen maps an admitted value to the newest event time it was seen at.
	seen map[string]int64
	// overflowed counts records folded into Overflow.
	overflowed int64
}

func newGuard(cfg GuardConfig) *guard {
	g := &guard{cfg: cfg}
	for i, l := range []int{cfg.MaxTenants, cfg.MaxServices, cfg.MaxModels, cfg.MaxVariants} {
		g.dims[i] = dimGuard{limit: l, seen: map[string]int64{}}
	}
	return g
}

// admit returns k with every dimension over its limit replaced by Overflow.
func (g *guard) admit(k schemas.Key, t int64) schemas.Key {
	k.Tenant = g.dims[0].admit(k.Tenant, t)
	k.Service = g.dims[1].admit(k.Service, t)
	k.Model = g.dims[2].admit(k.Model, t)
	k.Variant = g.dims[3].admit(k.Variant, t)
	return k
}

func (d *dimGuard) admit(v string, t int64) string {
	if d.limit <= 0 {
		return v
	}
	if last, ok := d.seen[v]; ok {
		if t > last {
			d.seen[v] = t
		}
		return v
	}
	if len(d.seen) >= d.limit {
		d.overflowed++
		return Overflow
	}
	d.seen[v] = t
	return v
}

// expire forgets values idle since before now - IdleTTL.
func (g *guard) expire(now int64) {
	if g.cfg.IdleTTLNanos <= 0 {
		return
	}
	for i := range g.dims {
		for v, last := range g.dims[i].seen {
			if last < now-g.cfg.IdleTTLNanos {
				delete(g.dims[i].seen, v)
			}
		}
	}
}

// Overflowed returns, per dimension in schemas.Dimensions order, how many records
// were folded into Overflow.
func (g *guard) overflowed() [4]int64 {
	var out [4]int64
	for i := range g.dims {
		out[i] = g.dims[i].overflowed
	}
	return out
}

func (g *guard) appendBinary(e *snapcodec.Encoder) {
	for i := range g.dims {
		d := &g.dims[i]
		e.I64(d.overflowed)
		vals := make([]string, 0, len(d.seen))
		for v := range d.seen {
			vals = append(vals, v)
		}
		slices.Sort(vals) // a deterministic snapshot
		e.Count(len(vals))
		for _, v := range vals {
			e.String(v)
			e.I64(d.seen[v])
		}
	}
}

func (g *guard) decodeBinary(r *snapcodec.Decoder) {
	for i := range g.dims {
		d := &g.dims[i]
		d.overflowed = r.I64()
		n := r.Count(12)
		d.seen = make(map[string]int64, n)
		for j := 0; j < n && r.Err() == nil; j++ {
			v := r.String()
			d.seen[v] = r.I64()
		}
	}
}
