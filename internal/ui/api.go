package ui

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/fusebox-dev/fusebox/schemas"
)

// KeyJSON is a key (or a fuse target, "*" for a wildcard dimension).
type KeyJSON struct {
	Tenant  string `json:"tenant"`
	Service string `json:"service"`
	Model   string `json:"model"`
	Variant string `json:"variant"`
}

func keyJSON(k schemas.Key) KeyJSON { return KeyJSON{k.Tenant, k.Service, k.Model, k.Variant} }

// KeysResponse is GET /api/ui/keys.
type KeysResponse struct {
	Keys []KeySummary `json:"keys"` // in tenant, service, model, variant order
	// Verdicts and Commands count what the store was given since start;
	// Series and Targets what it holds now; Dropped* what it evicted to
	// stay within Limits.
	Verdicts       int64  `json:"verdicts"`
	Commands       int64  `json:"commands"`
	Series         int    `json:"series"`
	Targets        int    `json:"targets"`
	DroppedSeries  int64  `json:"dropped_series"`
	DroppedTargets int64  `json:"dropped_targets"`
	Limits         Limits `json:"limits"`
}

// Limits are the store's bounds (Config with defaults).
type Limits struct {
	MaxSeries   int `json:"max_series"`
	MaxPoints   int `json:"max_points"`
	MaxTargets  int `json:"max_targets"`
	MaxCommands int `json:"max_commands"`
}

// KeySummary is one key of KeysResponse.
type KeySummary struct {
	Key KeyJSON `json:"key"`
	// Status is the worst status of the key's latest verdicts (breach,
	// warn, ok, insufficient_data in that order).
	Status     string   `json:"status"`
	Processors []string `json:"processors"` // sorted, distinct
	Series     int      `json:"series"`
}

// KeyResponse is GET /api/ui/key.
type KeyResponse struct {
	Key    KeyJSON      `json:"key"`
	Series []SeriesJSON `json:"series"` // in processor, SLO, metric order
}

// SeriesJSON is one series of KeyResponse.
type SeriesJSON struct {
	Processor string  `json:"processor"`
	SLO       string  `json:"slo"`
	Metric    string  `json:"metric"`
	Points    []Point `json:"points"`
	Latest    Latest  `json:"latest"`
}

// Latest is the newest verdict of a series.
type Latest struct {
	ID      string        `json:"id"`
	Point                 // its numbers
	Level   float64       `json:"level"` // the interval's confidence level, 0 when none
	Details []DetailJSON  `json:"details"`
	Evid    *EvidenceJSON `json:"evidence,omitempty"`
}

// DetailJSON is one detail, in the verdict's order.
type DetailJSON struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// EvidenceJSON is schemas.Evidence (see there), the lists absent when empty.
type EvidenceJSON struct {
	Current     *PointsJSON `json:"current,omitempty"`
	Reference   *PointsJSON `json:"reference,omitempty"`
	KSAt        float64     `json:"ks_at"`
	Exceedances *PointsJSON `json:"exceedances,omitempty"`
}

// PointsJSON is schemas.Points.
type PointsJSON struct {
	X []float64 `json:"x"`
	P []float64 `json:"p"`
	N int       `json:"n"`
}

func pointsJSON(p schemas.Points) *PointsJSON {
	if len(p.X) == 0 {
		return nil
	}
	return &PointsJSON{X: p.X, P: p.P, N: p.N}
}

// FuseResponse is GET /api/ui/fuse.
type FuseResponse struct {
	Targets        []TargetJSON `json:"targets"` // in target order
	DroppedTargets int64        `json:"dropped_targets"`
}

// TargetJSON is one target's timeline.
type TargetJSON struct {
	Target   KeyJSON   `json:"target"`
	Commands []Command `json:"commands"` // ascending issued-at, version
}

var statusRank = map[string]int{string(schemas.StatusBreach): 3, string(schemas.StatusWarn): 2, string(schemas.StatusOK): 1}

// Keys returns the KeysResponse of the store's current content.
func (s *Store) Keys() KeysResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	type acc struct {
		status string
		procs  []string
		n      int
	}
	byKey := map[schemas.Key]*acc{}
	for id, se := range s.series {
		a := byKey[id.key]
		if a == nil {
			a = &acc{status: string(schemas.StatusInsufficientData)}
			byKey[id.key] = a
		}
		a.n++
		if !slices.Contains(a.procs, id.processor) {
			a.procs = append(a.procs, id.processor)
		}
		if st := string(se.latest.Status); statusRank[st] > statusRank[a.status] {
			a.status = st
		}
	}
	r := KeysResponse{Keys: make([]KeySummary, 0, len(byKey)), Verdicts: s.verdicts, Commands: s.commands,
		Series: len(s.series), Targets: len(s.targets), DroppedSeries: s.droppedSeries, DroppedTargets: s.droppedTarget,
		Limits: Limits{s.cfg.MaxSeries, s.cfg.MaxPoints, s.cfg.MaxTargets, s.cfg.MaxCommands}}
	keys := make([]schemas.Key, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, keyLess)
	for _, k := range keys {
		a := byKey[k]
		slices.Sort(a.procs)
		r.Keys = append(r.Keys, KeySummary{Key: keyJSON(k), Status: a.status, Processors: a.procs, Series: a.n})
	}
	return r
}

// Key returns the series of key k, and false when the store has none.
func (s *Store) Key(k schemas.Key) (KeyResponse, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := KeyResponse{Key: keyJSON(k), Series: []SeriesJSON{}}
	for id, se := range s.series {
		if id.key != k {
			continue
		}
		v := se.latest
		l := Latest{ID: v.ID, Level: v.IntervalLevel, Details: make([]DetailJSON, len(v.Details)),
			Point: Point{T: v.WindowEndUnixNano / 1e6, Value: v.Value, Lower: v.Lower, Upper: v.Upper, Thresh: v.Threshold,
				Status: string(v.Status), Method: v.Method, N: v.N}}
		for i, d := range v.Details {
			l.Details[i] = DetailJSON{d.Name, d.Value}
		}
		if e := v.Evidence; e != nil {
			l.Evid = &EvidenceJSON{Current: pointsJSON(e.Current), Reference: pointsJSON(e.Reference), KSAt: e.KSAt,
				Exceedances: pointsJSON(e.Exceedances)}
		}
		r.Series = append(r.Series, SeriesJSON{Processor: id.processor, SLO: id.slo, Metric: id.metric,
			Points: slices.Clone(se.points), Latest: l})
	}
	slices.SortFunc(r.Series, func(a, b SeriesJSON) int {
		return strings.Compare(a.Processor+"\x00"+a.SLO+"\x00"+a.Metric, b.Processor+"\x00"+b.SLO+"\x00"+b.Metric)
	})
	return r, len(r.Series) > 0
}

// Fuse returns the fuse timelines.
func (s *Store) Fuse() FuseResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := FuseResponse{Targets: make([]TargetJSON, 0, len(s.targets)), DroppedTargets: s.droppedTarget}
	for _, t := range s.targets {
		r.Targets = append(r.Targets, TargetJSON{Target: keyJSON(t.key), Commands: slices.Clone(t.cmds)})
	}
	slices.SortFunc(r.Targets, func(a, b TargetJSON) int {
		return keyLess(schemas.Key(a.Target), schemas.Key(b.Target))
	})
	return r
}

// Routes returns the page's and the API's handlers by http.ServeMux
// pattern, for observe.Options.Routes.
func (s *Store) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		// the tenant SLO health matrix (tenants.go)
		"GET /api/ui/tenants": http.HandlerFunc(s.serveTenants),

		"GET /{$}":         http.RedirectHandler("/ui/", http.StatusFound),
		"GET /ui":          http.RedirectHandler("/ui/", http.StatusMovedPermanently),
		"GET /ui/":         assetHandler(),
		"GET /api/ui/keys": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Keys()) }),
		"GET /api/ui/fuse": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Fuse()) }),
		"GET /api/ui/key":  http.HandlerFunc(s.serveKey),
		"GET /api/ui/incidents": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, s.Incidents())
		}),
	}
}

// Handler serves Routes on a mux of its own (tests, or a listener of its
// own).
func (s *Store) Handler() http.Handler {
	mux := http.NewServeMux()
	for p, h := range s.Routes() {
		mux.Handle(p, h)
	}
	return mux
}

// keyParams are the query parameters of /api/ui/key; a missing one is "".
var keyParams = []string{"tenant", "service", "model", "variant"}

func (s *Store) serveKey(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for name := range q {
		if !slices.Contains(keyParams, name) {
			writeJSON(w, http.StatusBadRequest, errorJSON{"unknown query parameter " + strconv.Quote(name) + ": want tenant, service, model, variant"})
			return
		}
		if len(q[name]) > 1 {
			writeJSON(w, http.StatusBadRequest, errorJSON{"query parameter " + strconv.Quote(name) + " given more than once"})
			return
		}
	}
	k := schemas.Key{Tenant: q.Get("tenant"), Service: q.Get("service"), Model: q.Get("model"), Variant: q.Get("variant")}
	resp, ok := s.Key(k)
	if !ok {
		writeJSON(w, http.StatusNotFound, errorJSON{"no data yet for key " + k.String()})
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

type errorJSON struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
