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
	// MaxKeys bounds the distinct keys (the combinations of the
	// dimensions' admitted values) the worker keeps state for: the
	// per-dimension limits alone allow their product (1000 tenants × 200
	// models is 200,000 keys). A key beyond it folds into OverflowKey;
	// keys already known keep their own state. 0 means no limit.
	MaxKeys int
	// IdleTTLNanos forgets a value not seen for this long (event time), so
	// that its slot can go to a new value. 0: never.
	IdleTTLNanos int64
}

// OverflowKey is the key every new key beyond GuardConfig.MaxKeys folds
// into (the dimensions not keyed by stay blank).
var OverflowKey = schemas.Key{Tenant: Overflow, Service: Overflow, Model: Overflow, Variant: Overflow}

// guard is the cardinality guard of one partition worker. It is part of the
// worker's deterministic state: which values are admitted depends only on
// the order of on-time records.
type guard struct {
	cfg  GuardConfig
	dims [4]dimGuard
	// keys maps an admitted key to the newest event time it was seen at
	// (only with MaxKeys); keysOverflowed counts records folded into
	// OverflowKey because of MaxKeys.
	keys           map[schemas.Key]int64
	keysOverflowed int64
	// overflowKey is OverflowKey projected on the keyed dimensions.
	overflowKey schemas.Key
}

type dimGuard struct {
	limit int
	// seen maps an admitted value to the newest event time it was seen at.
	seen map[string]int64
	// overflowed counts records folded into Overflow.
	overflowed int64
}

func newGuard(cfg GuardConfig, dims KeyDims) *guard {
	g := &guard{cfg: cfg, keys: map[schemas.Key]int64{}, overflowKey: dims.Project(OverflowKey)}
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
	if g.cfg.MaxKeys <= 0 || k == g.overflowKey {
		return k
	}
	if last, ok := g.keys[k]; ok {
		if t > last {
			g.keys[k] = t
		}
		return k
	}
	if len(g.keys) >= g.cfg.MaxKeys {
		g.keysOverflowed++
		return g.overflowKey
	}
	g.keys[k] = t
	return k
}

// liveKeys is the number of keys admitted under MaxKeys.
func (g *guard) liveKeys() int { return len(g.keys) }

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
	for k, last := range g.keys {
		if last < now-g.cfg.IdleTTLNanos {
			delete(g.keys, k)
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
	g.appendDims(e)
	g.appendKeys(e)
}

// appendDims writes the per-dimension part, all that version 2 held.
func (g *guard) appendDims(e *snapcodec.Encoder) {
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

// appendKeys writes the live keys (format version 3 on).
func (g *guard) appendKeys(e *snapcodec.Encoder) {
	e.I64(g.keysOverflowed)
	keys := make([]schemas.Key, 0, len(g.keys))
	for k := range g.keys {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	e.Count(len(keys))
	for _, k := range keys {
		e.String(k.Tenant)
		e.String(k.Service)
		e.String(k.Model)
		e.String(k.Variant)
		e.I64(g.keys[k])
	}
}

func compareKeys(a, b schemas.Key) int {
	for _, c := range [...][2]string{{a.Tenant, b.Tenant}, {a.Service, b.Service}, {a.Model, b.Model}, {a.Variant, b.Variant}} {
		if c[0] != c[1] {
			if c[0] < c[1] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func (g *guard) decodeBinary(r *snapcodec.Decoder, withKeys bool) {
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
	if !withKeys {
		// A version-2 snapshot: no key bound yet. The keys known are
		// learnt again from the next records.
		return
	}
	g.keysOverflowed = r.I64()
	n := r.Count(20)
	g.keys = make(map[schemas.Key]int64, n)
	for j := 0; j < n && r.Err() == nil; j++ {
		k := schemas.Key{Tenant: r.String(), Service: r.String(), Model: r.String(), Variant: r.String()}
		g.keys[k] = r.I64()
	}
}
