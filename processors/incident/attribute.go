package incident

import (
	"cmp"
	"slices"
	"strings"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/stats"
)

// level is one kind of candidate: one dimension or a pair of key
// dimensions. levels is their order of preference on ties (see the
// package doc): single dimensions first, model before provider (a
// provider with one model covers the same keys, and a model is a target
// the gateways match), then tenant, service, variant.
type level struct {
	name string   // "model", "model,variant"
	dims []string // dimension names
}

var levels = []level{
	{"model", []string{schemas.DimModel}},
	{"provider", []string{schemas.DimProvider}},
	{"tenant", []string{schemas.DimTenant}},
	{"service", []string{schemas.DimService}},
	{"variant", []string{schemas.DimVariant}},
	{"model,variant", []string{schemas.DimModel, schemas.DimVariant}},
	{"tenant,model", []string{schemas.DimTenant, schemas.DimModel}},
	{"tenant,service", []string{schemas.DimTenant, schemas.DimService}},
	{"service,model", []string{schemas.DimService, schemas.DimModel}},
	{"tenant,variant", []string{schemas.DimTenant, schemas.DimVariant}},
	{"service,variant", []string{schemas.DimService, schemas.DimVariant}},
}

// dimValue is key k's value of dimension d; provider comes from the
// configured model → provider map ("" when unknown: not a candidate).
func dimValue(k schemas.Key, d string, providers map[string]string) string {
	switch d {
	case schemas.DimTenant:
		return k.Tenant
	case schemas.DimService:
		return k.Service
	case schemas.DimModel:
		return k.Model
	case schemas.DimVariant:
		return k.Variant
	case schemas.DimProvider:
		return providers[k.Model]
	}
	return ""
}

// valueOf is k's value at level l, joined by ","; ok is false when a
// dimension is empty (not keyed) or a wildcard.
func valueOf(k schemas.Key, l level, providers map[string]string) (string, bool) {
	var b strings.Builder
	for i, d := range l.dims {
		v := dimValue(k, d, providers)
		if v == "" || v == schemas.Wildcard {
			return "", false
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(v)
	}
	return b.String(), true
}

// attribution is one explained group of breaching keys.
type attribution struct {
	level       int // index in levels
	value       string
	n, b        int64 // the value's keys and breaching keys
	pAdj        float64
	keys        []schemas.Key // the breaching keys it explains, in key order
	otherB      int64         // breaching keys without the value
	otherHealth int64
}

// name is the attribution's identity within an SLO.
func (a *attribution) name() string { return levels[a.level].name + "=" + a.value }

// candidate is one tested value.
type candidate struct {
	level    int
	value    string
	n, b     int64
	p, pAdj  float64
	breaches []int // indices of its breaching keys
	members  []int // indices of all its keys, ascending
}

// attribute explains the breaching keys of one decided boundary (see the
// package doc). keys are every key with a status, in key order.
func (s *Stage) attribute(keys []schemas.SummaryKey) []attribution {
	N := int64(len(keys))
	var B int64
	for i := range keys {
		if keys[i].Status == schemas.StatusBreach {
			B++
		}
	}
	if B < int64(s.cfg.MinKeys) {
		return nil
	}
	var cands []*candidate
	for li, l := range levels {
		byValue := map[string]*candidate{}
		for i := range keys {
			v, ok := valueOf(keys[i].Key, l, s.cfg.Providers)
			if !ok {
				continue
			}
			c := byValue[v]
			if c == nil {
				c = &candidate{level: li, value: v}
				byValue[v] = c
			}
			c.n++
			c.members = append(c.members, i)
			if keys[i].Status == schemas.StatusBreach {
				c.b++
				c.breaches = append(c.breaches, i)
			}
		}
		for _, c := range byValue {
			if c.b >= int64(s.cfg.MinKeys) {
				cands = append(cands, c)
			}
		}
	}
	if len(cands) == 0 {
		return nil
	}
	// A fixed order before testing: Holm's ties and the greedy choice
	// then depend on nothing but the keys.
	slices.SortFunc(cands, func(a, b *candidate) int {
		return cmp.Or(cmp.Compare(a.level, b.level), strings.Compare(a.value, b.value))
	})
	ps := make([]float64, len(cands))
	for i, c := range cands {
		p, err := stats.HypergeomUpperTail(c.b, N, B, c.n)
		if err != nil {
			p = 1 // unreachable: counts come from the same keys
		}
		c.p, ps[i] = p, p
	}
	adj, err := stats.Holm(ps)
	if err != nil {
		return nil
	}
	var sig []*candidate
	for i, c := range cands {
		c.pAdj = adj[i]
		if c.pAdj < s.cfg.Alpha && float64(c.b) >= s.cfg.MinPurity*float64(c.n) {
			sig = append(sig, c)
		}
	}
	explained := make([]bool, len(keys))
	claimed := make([]bool, len(keys)) // every key of a value attributed already
	var out []attribution
	for {
		var best *candidate
		var bestCover int
		for _, c := range sig {
			cover := 0
			for _, i := range c.breaches {
				if !explained[i] {
					cover++
				}
			}
			// Its purity on what no attribution took yet: a model whose
			// canary was attributed is not attributed again for three
			// noise breaches among its baselines.
			free := 0
			for _, i := range c.members {
				if !claimed[i] {
					free++
				}
			}
			if float64(cover) < s.cfg.MinPurity*float64(free) {
				continue
			}
			if best == nil || better(c, cover, best, bestCover) {
				best, bestCover = c, cover
			}
		}
		if best == nil || bestCover < s.cfg.MinKeys {
			break
		}
		best = s.finest(best, sig, explained)
		a := attribution{level: best.level, value: best.value, n: best.n, b: best.b, pAdj: best.pAdj}
		fresh := 0
		for _, i := range best.breaches {
			if !explained[i] {
				fresh++
			}
			explained[i] = true
			a.keys = append(a.keys, keys[i].Key)
		}
		if fresh == 0 {
			break // explains nothing new: done (and no loop)
		}
		for _, i := range best.members {
			claimed[i] = true
		}
		a.otherB = B - best.b
		a.otherHealth = (N - B) - (best.n - best.b)
		out = append(out, a)
	}
	return out
}

// finest returns, instead of best, a significant candidate nested in it
// (its keys a strict subset of best's) when best's extra keys — best's
// minus the nested one's — breach below MinPurity: one noise breach
// beside a model's bad canary must not widen the attribution to the model
// (tripping its healthy baselines), nor one of another model widen a slow
// model to its provider. Among such nested candidates the one covering
// most breaching keys is taken (ties as in better), and again from it.
func (s *Stage) finest(best *candidate, sig []*candidate, explained []bool) *candidate {
	cover := func(c *candidate) int {
		n := 0
		for _, i := range c.breaches {
			if !explained[i] {
				n++
			}
		}
		return n
	}
	for {
		var next *candidate
		nextCover := 0
		for _, f := range sig {
			if f == best || len(f.members) >= len(best.members) || !subset(f.members, best.members) {
				continue
			}
			fc := cover(f)
			if fc < s.cfg.MinKeys {
				continue // explains too little that is still unexplained
			}
			extra, extraB := int64(len(best.members)-len(f.members)), best.b-f.b
			if float64(extraB) >= s.cfg.MinPurity*float64(extra) {
				continue // the coarser value's other keys breach too
			}
			if next == nil || better(f, fc, next, nextCover) {
				next, nextCover = f, fc
			}
		}
		if next == nil {
			return best
		}
		best = next // strictly fewer keys each time: this ends
	}
}

// subset reports whether every index of a (ascending) is in b (ascending).
func subset(a, b []int) bool {
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j == len(b) || b[j] != x {
			return false
		}
	}
	return true
}

// better reports whether candidate c (covering cover unexplained
// breaches) is preferred to best: more coverage, then higher purity, then
// the earlier level, then the smaller value.
func better(c *candidate, cover int, best *candidate, bestCover int) bool {
	if cover != bestCover {
		return cover > bestCover
	}
	// purity c.b/c.n vs best.b/best.n, compared exactly.
	if l, r := c.b*best.n, best.b*c.n; l != r {
		return l > r
	}
	if c.level != best.level {
		return c.level < best.level
	}
	return c.value < best.value
}
