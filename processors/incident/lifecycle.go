package incident

import (
	"slices"

	"github.com/fusebox-dev/fusebox/schemas"
)

// decide attributes one decided boundary of an SLO and moves its
// incidents on (see the package doc); keys are in key order.
func (s *Stage) decide(slo string, st *sloState, at int64, keys []schemas.SummaryKey) []schemas.Incident {
	atts := s.attribute(keys)
	found := map[string]*attribution{}
	for i := range atts {
		found[atts[i].name()] = &atts[i]
	}
	tripped := map[schemas.Key]bool{}
	for i := range keys {
		if keys[i].Tripped {
			tripped[keys[i].Key] = true
		}
	}
	var out []schemas.Incident
	// Attributions, in name order.
	names := make([]string, 0, len(found))
	for n := range found {
		names = append(names, n)
	}
	slices.Sort(names)
	// refined marks the open incidents a finer attribution found inside
	// (its breaching keys all carry the open one's value: the tail of a
	// tenant's incident when only its baseline still breaches): that
	// keeps the open incident, it opens nothing new.
	refined := map[string]bool{}
	for _, name := range names {
		a := found[name]
		o := st.Open[name]
		status := schemas.IncidentOngoing
		if o == nil {
			if p := s.within(st, a); p != nil {
				refined[p.Name] = true
				continue
			}
			st.Streak[name]++
			// The per-key breaker's trip of one of its keys, here or
			// earlier (an open key incident), is persistence enough: the
			// incident is no slower than the first trip it explains.
			early := false
			for _, k := range a.keys {
				early = early || tripped[k] || st.Open["key="+k.String()] != nil
			}
			if st.Streak[name] < s.cfg.OpenAfter && !early {
				continue
			}
			delete(st.Streak, name)
			o = &open{Name: name, Level: a.level, Value: a.value, First: at,
				ID: schemas.IncidentIDOf(slo, levels[a.level].name, a.value, at)}
			st.Open[name] = o
			s.stats.Opened++
			status = schemas.IncidentOpened
		} else if a.b > o.Breaching {
			status = schemas.IncidentGrowing
		}
		o.Last, o.Misses, o.Breaching, o.PValue = at, 0, a.b, a.pAdj
		out = append(out, s.record(slo, st, o, at, status, a.b, a.n-a.b, a.otherB, a.otherHealth, a.keys))
		if status == schemas.IncidentOpened {
			out = append(out, s.merge(slo, st, o, at, keys)...)
		}
	}
	for name := range st.Streak {
		if found[name] == nil {
			delete(st.Streak, name)
		}
	}
	// Open aggregate incidents not found here: resolving, then closed.
	for _, o := range sortedOpen(st) {
		if o.Level < 0 || found[o.Name] != nil {
			continue
		}
		b, h, ob, oh, ks := s.count(keys, func(k schemas.Key) bool {
			v, ok := valueOf(k, levels[o.Level], s.cfg.Providers)
			return ok && v == o.Value
		})
		if refined[o.Name] {
			o.Last, o.Misses, o.Breaching = at, 0, b
			out = append(out, s.record(slo, st, o, at, schemas.IncidentOngoing, b, h, ob, oh, ks))
			continue
		}
		if b+h == 0 {
			// No key of the value was judged (its traffic stopped — the
			// level's own trip, most likely — or is insufficient): no
			// evidence either way, neither found nor missed.
			out = append(out, s.record(slo, st, o, at, schemas.IncidentOngoing, b, h, ob, oh, ks))
			continue
		}
		out = append(out, s.miss(slo, st, o, at, b, h, ob, oh, ks))
	}
	// Key incidents: a tripped breaching key no open incident covers
	// opens one; an open one stays while its key breaches.
	for i := range keys {
		k := &keys[i]
		if !k.Tripped || k.Status != schemas.StatusBreach || st.Open["key="+k.Key.String()] != nil || s.covered(st, k.Key) {
			continue
		}
		name := "key=" + k.Key.String()
		st.Open[name] = &open{Name: name, Level: -1, Value: k.Key.String(), Key: k.Key, First: at, Last: at - 1, PValue: 1,
			ID: schemas.IncidentIDOf(slo, schemas.DimKey, k.Key.String(), at)}
		s.stats.Opened++
	}
	for _, o := range sortedOpen(st) {
		if o.Level >= 0 {
			continue
		}
		b, h, ob, oh, ks := s.count(keys, func(k schemas.Key) bool { return k == o.Key })
		if b+h == 0 && o.First != at {
			// The key was not judged (its trip stopped its traffic): no
			// evidence either way.
			out = append(out, s.record(slo, st, o, at, schemas.IncidentOngoing, b, h, ob, oh, ks))
			continue
		}
		if b == 0 {
			out = append(out, s.miss(slo, st, o, at, b, h, ob, oh, ks))
			continue
		}
		status := schemas.IncidentOngoing
		if o.First == at {
			status = schemas.IncidentOpened
		}
		o.Last, o.Misses, o.Breaching = at, 0, b
		out = append(out, s.record(slo, st, o, at, status, b, h, ob, oh, ks))
	}
	return out
}

// miss records a boundary that did not find open incident o.
func (s *Stage) miss(slo string, st *sloState, o *open, at int64, b, h, ob, oh int64, ks []schemas.Key) schemas.Incident {
	o.Misses++
	status := schemas.IncidentResolving
	if o.Misses >= s.cfg.CloseAfter {
		status = schemas.IncidentClosed
		delete(st.Open, o.Name)
		st.Closing[o.Name] = o
		s.stats.Closed++
	}
	return s.record(slo, st, o, at, status, b, h, ob, oh, ks)
}

// merge closes into o, which opens at at, the open incidents it
// contains: key incidents of keys carrying o's value (the per-key trips
// that came first were this incident) and finer aggregate ones whose
// value's keys at this boundary all carry o's value (a tenant's baseline
// breached first, then the whole tenant). Each gets a closed record with
// MergedInto o's id.
func (s *Stage) merge(slo string, st *sloState, o *open, at int64, keys []schemas.SummaryKey) []schemas.Incident {
	carries := func(k schemas.Key, x *open) bool {
		if x.Level < 0 {
			return k == x.Key
		}
		v, ok := valueOf(k, levels[x.Level], s.cfg.Providers)
		return ok && v == x.Value
	}
	var out []schemas.Incident
	for _, f := range sortedOpen(st) {
		if f == o {
			continue
		}
		inside, any := true, false
		for i := range keys {
			if carries(keys[i].Key, f) {
				any = true
				inside = inside && carries(keys[i].Key, o)
			}
		}
		if !any || !inside {
			continue
		}
		b, h, ob, oh, ks := s.count(keys, func(k schemas.Key) bool { return carries(k, f) })
		r := s.record(slo, st, f, at, schemas.IncidentClosed, b, h, ob, oh, ks)
		r.MergedInto = o.ID
		o.Targets = append(o.Targets, f.Targets...)
		out = append(out, r)
		delete(st.Open, f.Name)
		s.stats.Closed++
	}
	return out
}

// within returns the open aggregate incident (the first by name) whose
// value every breaching key of a carries, or nil.
func (s *Stage) within(st *sloState, a *attribution) *open {
	for _, o := range sortedOpen(st) {
		if o.Level < 0 {
			continue
		}
		all := true
		for _, k := range a.keys {
			v, ok := valueOf(k, levels[o.Level], s.cfg.Providers)
			all = all && ok && v == o.Value
		}
		if all {
			return o
		}
	}
	return nil
}

// covered reports whether an open aggregate incident's value is k's.
func (s *Stage) covered(st *sloState, k schemas.Key) bool {
	for _, o := range st.Open {
		if o.Level < 0 {
			continue
		}
		if v, ok := valueOf(k, levels[o.Level], s.cfg.Providers); ok && v == o.Value {
			return true
		}
	}
	return false
}

// count returns, among keys, the breaching and healthy keys in (by in)
// and out of it, and the breaching keys in it.
func (s *Stage) count(keys []schemas.SummaryKey, in func(schemas.Key) bool) (b, h, ob, oh int64, ks []schemas.Key) {
	for i := range keys {
		br := keys[i].Status == schemas.StatusBreach
		switch {
		case in(keys[i].Key) && br:
			b++
			ks = append(ks, keys[i].Key)
		case in(keys[i].Key):
			h++
		case br:
			ob++
		default:
			oh++
		}
	}
	return
}

func (s *Stage) record(slo string, st *sloState, o *open, at int64, status schemas.IncidentStatus, b, h, ob, oh int64, ks []schemas.Key) schemas.Incident {
	dim := schemas.DimKey
	if o.Level >= 0 {
		dim = levels[o.Level].name
	}
	if len(ks) > s.cfg.MaxKeys {
		ks = ks[:s.cfg.MaxKeys]
	}
	last := o.Last
	if last < o.First {
		last = o.First
	}
	return schemas.Incident{
		ID: schemas.IncidentRecordID(o.ID, at), IncidentID: o.ID, SLO: slo, Processor: st.Processor,
		Dimension: dim, Value: o.Value, Status: status,
		Breaching: b, Healthy: h, OtherBreaching: ob, OtherHealthy: oh, PValue: o.PValue,
		FirstUnixNano: o.First, LastUnixNano: last, AtUnixNano: at,
		Keys: slices.Clone(ks), ConfigVersion: s.cfg.ConfigVersion,
	}
}

func sortedOpen(st *sloState) []*open {
	os := make([]*open, 0, len(st.Open))
	for _, o := range st.Open {
		os = append(os, o)
	}
	slices.SortFunc(os, func(a, b *open) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return os
}
