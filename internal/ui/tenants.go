package ui

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/fusebox-dev/fusebox/schemas"
)

// DefaultObjective is the objective of GET /api/ui/tenants without one:
// the share of evaluated minutes in objective an SLO promises.
const DefaultObjective = 0.999

// TenantsResponse is GET /api/ui/tenants?objective=O: the tenant SLO
// health matrix over what the store holds, with the definitions of the
// report tenant_slo_health (sql/reports/tenant_slo_health.sql), so the page
// and the report agree on the same verdicts:
//
//   - a slot is one evaluation of an SLO for a tenant (tenant, SLO, window
//     end in whole seconds): out of objective when any verdict of the
//     tenant's keys for the SLO at that window end is a breach, in
//     objective when none is and one is ok or warn, not evaluated when all
//     are insufficient_data. Effect verdicts and tenant "*" are left out.
//   - step_s is the SLO's evaluation interval: the smallest gap between two
//     distinct window ends of the SLO held; 60 with a single one.
//   - compliance = in-objective / evaluated slots; minutes = slots ×
//     step_s / 60; budget_minutes = (1 − objective) × evaluated minutes;
//     budget_remaining = 1 − minutes_out / budget_minutes.
//   - breach_episodes: maximal runs of consecutive out-of-objective slots
//     among the evaluated ones.
//   - incidents: distinct incident ids (a command's first correlation id)
//     of the commands held, issued at or after From, that name the SLO
//     (slo:NAME) and whose target covers a key of the tenant with verdicts
//     of the SLO; fuse_commands those commands.
//
// The range is the store's: From and To are the earliest and latest window
// end it holds (Unix ms), at most Config.MaxPoints evaluations per series;
// a series or target the store evicted is not counted.
type TenantsResponse struct {
	Objective float64     `json:"objective"`
	From      int64       `json:"from"` // 0 when the store holds no SLO verdict
	To        int64       `json:"to"`
	Rows      []TenantSLO `json:"rows"` // by tenant, then SLO; only pairs with an evaluated slot
}

// TenantSLO is one cell of the matrix (see TenantsResponse).
type TenantSLO struct {
	Tenant            string  `json:"tenant"`
	SLO               string  `json:"slo"`
	StepS             int64   `json:"step_s"`
	EvaluatedMinutes  float64 `json:"evaluated_minutes"`
	MinutesOut        float64 `json:"minutes_out"`
	Compliance        float64 `json:"compliance"`
	BudgetMinutes     float64 `json:"budget_minutes"`
	BudgetMinutesLeft float64 `json:"budget_minutes_left"`
	BudgetRemaining   float64 `json:"budget_remaining"`
	BreachEvaluations int     `json:"breach_evaluations"`
	BreachEpisodes    int     `json:"breach_episodes"`
	Incidents         int     `json:"incidents"`
	FuseCommands      int     `json:"fuse_commands"`
}

// slotState is what a slot's verdicts say.
type slotState struct {
	out, judged bool
}

// Tenants returns the matrix at objective, which must be in (0, 1).
func (s *Store) Tenants(objective float64) TenantsResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	type pair struct{ tenant, slo string }
	slots := map[pair]map[int64]*slotState{} // window end, seconds
	breaches := map[pair]int{}
	ends := map[string]map[int64]bool{}
	keys := map[string][]schemas.Key{} // per SLO, the tenants' keys
	r := TenantsResponse{Objective: objective, Rows: []TenantSLO{}}
	for id, se := range s.series {
		if id.processor == "effect" || id.slo == "" || id.key.Tenant == "*" || len(se.points) == 0 {
			continue
		}
		p := pair{id.key.Tenant, id.slo}
		if slots[p] == nil {
			slots[p] = map[int64]*slotState{}
		}
		if ends[id.slo] == nil {
			ends[id.slo] = map[int64]bool{}
		}
		if !slices.Contains(keys[id.slo], id.key) {
			keys[id.slo] = append(keys[id.slo], id.key)
		}
		for _, pt := range se.points {
			sec := floorDiv(pt.T, 1000)
			ends[id.slo][sec] = true
			st := slots[p][sec]
			if st == nil {
				st = &slotState{}
				slots[p][sec] = st
			}
			switch schemas.Status(pt.Status) {
			case schemas.StatusBreach:
				st.out, st.judged = true, true
				breaches[p]++
			case schemas.StatusOK, schemas.StatusWarn:
				st.judged = true
			}
			if r.From == 0 || pt.T < r.From {
				r.From = pt.T
			}
			r.To = max(r.To, pt.T)
		}
	}
	steps := map[string]int64{}
	for slo, set := range ends {
		ts := make([]int64, 0, len(set))
		for t := range set {
			ts = append(ts, t)
		}
		slices.Sort(ts)
		steps[slo] = 60
		for i := 1; i < len(ts); i++ {
			if gap := ts[i] - ts[i-1]; i == 1 || gap < steps[slo] {
				steps[slo] = gap
			}
		}
	}
	incidents := map[pair]map[string]bool{}
	commands := map[pair]int{}
	for _, tg := range s.targets {
		for _, c := range tg.cmds {
			if c.Incident == "" || c.T < r.From {
				continue
			}
			for _, slo := range c.SLOs {
				seen := map[string]bool{}
				for _, k := range keys[slo] {
					if !covers(tg.key, k) || seen[k.Tenant] {
						continue
					}
					seen[k.Tenant] = true
					p := pair{k.Tenant, slo}
					if incidents[p] == nil {
						incidents[p] = map[string]bool{}
					}
					incidents[p][c.Incident] = true
					commands[p]++
				}
			}
		}
	}
	for p, byEnd := range slots {
		ts := make([]int64, 0, len(byEnd))
		for t, st := range byEnd {
			if st.judged {
				ts = append(ts, t)
			}
		}
		if len(ts) == 0 {
			continue
		}
		slices.Sort(ts)
		row := TenantSLO{Tenant: p.tenant, SLO: p.slo, StepS: steps[p.slo], BreachEvaluations: breaches[p],
			Incidents: len(incidents[p]), FuseCommands: commands[p]}
		out, prev := 0, false
		for _, t := range ts {
			o := byEnd[t].out
			if o {
				out++
				if !prev {
					row.BreachEpisodes++
				}
			}
			prev = o
		}
		step := float64(row.StepS)
		row.EvaluatedMinutes = float64(len(ts)) * step / 60
		row.MinutesOut = float64(out) * step / 60
		row.Compliance = float64(len(ts)-out) / float64(len(ts))
		row.BudgetMinutes = (1 - objective) * row.EvaluatedMinutes
		row.BudgetMinutesLeft = row.BudgetMinutes - row.MinutesOut
		row.BudgetRemaining = 1 - row.MinutesOut/row.BudgetMinutes
		r.Rows = append(r.Rows, row)
	}
	slices.SortFunc(r.Rows, func(a, b TenantSLO) int {
		return strings.Compare(a.Tenant+"\x00"+a.SLO, b.Tenant+"\x00"+b.SLO)
	})
	return r
}

// covers reports whether target t applies to key k ("*" matches any value).
func covers(t, k schemas.Key) bool {
	m := func(a, b string) bool { return a == "*" || a == b }
	return m(t.Tenant, k.Tenant) && m(t.Service, k.Service) && m(t.Model, k.Model) && m(t.Variant, k.Variant)
}

// floorDiv is a / b rounded down (DateTime's truncation of a window end to
// whole seconds, also before 1970).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// serveTenants answers GET /api/ui/tenants[?objective=O].
func (s *Store) serveTenants(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	objective := DefaultObjective
	for name, vs := range q {
		if name != "objective" || len(vs) > 1 {
			writeJSON(w, http.StatusBadRequest, errorJSON{"unknown or repeated query parameter " + strconv.Quote(name) + ": want objective, once"})
			return
		}
		o, err := strconv.ParseFloat(vs[0], 64)
		if err != nil || !(o > 0 && o < 1) {
			writeJSON(w, http.StatusBadRequest, errorJSON{fmt.Sprintf("objective %q: want a number in (0, 1), e.g. 0.999", vs[0])})
			return
		}
		objective = o
	}
	writeJSON(w, http.StatusOK, s.Tenants(objective))
}
