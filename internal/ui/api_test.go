package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
)

var (
	kA = schemas.Key{Tenant: "acme", Service: "chat", Model: "gpt-4o-mini", Variant: "baseline"}
	kB = schemas.Key{Tenant: "globex", Service: "chat", Model: "haiku", Variant: "canary"}
	tA = schemas.Key{Tenant: "acme", Service: "chat", Model: "gpt-4o-mini", Variant: schemas.Wildcard}
)

const minute = int64(60e9)

func tailVerdict(k schemas.Key, end int64, v float64, st schemas.Status) schemas.Verdict {
	return schemas.Verdict{ID: "t" + k.String(), Processor: "tail", SLO: "latency-p999", Metric: "p999_duration_ms", Key: k,
		WindowStartUnixNano: end - 5*minute, WindowEndUnixNano: end, Value: v, Threshold: 15000, Lower: v * 0.9, Upper: v * 1.2,
		IntervalLevel: 0.95, Status: st, Method: "gpd_mle_profile", N: 1000,
		Details:  []schemas.Detail{{Name: "xi", Value: 0.1}, {Name: "sigma", Value: 300}},
		Evidence: &schemas.Evidence{Exceedances: schemas.PlottingPoints([]float64{1, 2, 3}, 64)}}
}

func newTestStore(t *testing.T, cfg Config) *Store {
	t.Helper()
	s, err := NewStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func get(t *testing.T, h http.Handler, path string) (int, string, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body := rec.Body.String()
	var m map[string]any
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
			t.Fatalf("GET %s: %v in %q", path, err, body)
		}
	}
	return rec.Code, body, m
}

// TestAPIHandlers checks every route of the page and the API on an empty
// store and on one holding a few verdicts and commands.
func TestAPIHandlers(t *testing.T) {
	filled := newTestStore(t, Config{})
	ctx := context.Background()
	_ = filled.Write(ctx, schemas.Output{
		Verdicts: []schemas.Verdict{
			tailVerdict(kA, 10*minute, 900, schemas.StatusOK),
			tailVerdict(kA, 11*minute, 16000, schemas.StatusWarn),
			{ID: "d", Processor: "drift", SLO: "canary-confidence", Metric: "ks_confidence", Key: kB, WindowEndUnixNano: 11 * minute,
				Value: 0.25, Threshold: 0.1, Status: schemas.StatusBreach, Method: "ks_exact", N: 400,
				Evidence: &schemas.Evidence{Current: schemas.ECDFPoints([]float64{0.1, 0.2}, 64), Reference: schemas.ECDFPoints([]float64{0.3}, 64), KSAt: 0.2}},
		},
		Commands: []schemas.FuseCommand{
			{Target: tA, Action: schemas.ActionClose, State: schemas.StateClosed, Version: 2, IssuedAtUnixNano: 14 * minute},
			{Target: tA, Action: schemas.ActionTrip, State: schemas.StateOpen, Level: 2, Version: 1, IssuedAtUnixNano: 11 * minute,
				Reasons: []schemas.Reason{{VerdictID: "t", Text: "p999 over budget"}}},
		},
	})
	emptyStore := newTestStore(t, Config{})
	cases := []struct {
		name  string
		store *Store
		path  string
		code  int
		check func(t *testing.T, body string, m map[string]any)
	}{
		{"root redirects to the page", filled, "/", http.StatusFound, nil},
		{"page", emptyStore, "/ui/", http.StatusOK, func(t *testing.T, body string, _ map[string]any) {
			if !strings.Contains(body, `<script src="app.js">`) || strings.Contains(body, "http://") && !strings.Contains(body, "www.w3.org") {
				t.Errorf("index.html: %q", body)
			}
		}},
		{"script", emptyStore, "/ui/app.js", http.StatusOK, func(t *testing.T, body string, _ map[string]any) {
			if !strings.Contains(body, "no data yet") {
				t.Error("app.js has no empty state")
			}
		}},
		{"style", emptyStore, "/ui/style.css", http.StatusOK, nil},
		{"missing asset", emptyStore, "/ui/nope.js", http.StatusNotFound, nil},
		{"keys, empty", emptyStore, "/api/ui/keys", http.StatusOK, func(t *testing.T, _ string, m map[string]any) {
			if ks, ok := m["keys"].([]any); !ok || len(ks) != 0 || m["verdicts"] != 0.0 {
				t.Errorf("empty store: %v, want keys [] (not null) and 0 verdicts", m)
			}
			lim := m["limits"].(map[string]any)
			if lim["max_series"] != float64(DefaultMaxSeries) || lim["max_points"] != float64(DefaultMaxPoints) {
				t.Errorf("limits %v", lim)
			}
		}},
		{"keys", filled, "/api/ui/keys", http.StatusOK, func(t *testing.T, _ string, m map[string]any) {
			ks := m["keys"].([]any)
			if len(ks) != 2 || m["verdicts"] != 3.0 || m["commands"] != 2.0 || m["series"] != 2.0 || m["targets"] != 1.0 {
				t.Fatalf("keys %v", m)
			}
			first := ks[0].(map[string]any)
			if first["key"].(map[string]any)["tenant"] != "acme" || first["status"] != "warn" {
				t.Errorf("first key %v, want acme with its latest status warn", first)
			}
			if ks[1].(map[string]any)["status"] != "breach" {
				t.Errorf("second key %v, want breach", ks[1])
			}
		}},
		{"key", filled, "/api/ui/key?tenant=acme&service=chat&model=gpt-4o-mini&variant=baseline", http.StatusOK, func(t *testing.T, _ string, m map[string]any) {
			ss := m["series"].([]any)
			if len(ss) != 1 {
				t.Fatalf("series %v", ss)
			}
			se := ss[0].(map[string]any)
			pts := se["points"].([]any)
			if len(pts) != 2 || pts[0].(map[string]any)["t"] != float64(10*minute/1e6) || pts[1].(map[string]any)["thr"] != 15000.0 {
				t.Errorf("points %v", pts)
			}
			l := se["latest"].(map[string]any)
			ex := l["evidence"].(map[string]any)["exceedances"].(map[string]any)
			if l["v"] != 16000.0 || l["status"] != "warn" || len(ex["x"].([]any)) != 3 || len(l["details"].([]any)) != 2 {
				t.Errorf("latest %v", l)
			}
		}},
		{"key with the drift evidence", filled, "/api/ui/key?tenant=globex&service=chat&model=haiku&variant=canary", http.StatusOK, func(t *testing.T, _ string, m map[string]any) {
			ev := m["series"].([]any)[0].(map[string]any)["latest"].(map[string]any)["evidence"].(map[string]any)
			if ev["ks_at"] != 0.2 || len(ev["current"].(map[string]any)["x"].([]any)) != 2 || ev["exceedances"] != nil {
				t.Errorf("evidence %v", ev)
			}
		}},
		{"unknown key", filled, "/api/ui/key?tenant=nobody", http.StatusNotFound, func(t *testing.T, _ string, m map[string]any) {
			if !strings.Contains(m["error"].(string), "no data yet") {
				t.Errorf("error %v", m)
			}
		}},
		{"unknown parameter", filled, "/api/ui/key?tennant=acme", http.StatusBadRequest, func(t *testing.T, _ string, m map[string]any) {
			if !strings.Contains(m["error"].(string), `"tennant"`) {
				t.Errorf("error %v does not name the parameter", m)
			}
		}},
		{"repeated parameter", filled, "/api/ui/key?tenant=a&tenant=b", http.StatusBadRequest, nil},
		{"fuse, empty", emptyStore, "/api/ui/fuse", http.StatusOK, func(t *testing.T, _ string, m map[string]any) {
			if ts, ok := m["targets"].([]any); !ok || len(ts) != 0 {
				t.Errorf("fuse %v, want targets []", m)
			}
		}},
		{"fuse", filled, "/api/ui/fuse", http.StatusOK, func(t *testing.T, _ string, m map[string]any) {
			ts := m["targets"].([]any)
			cmds := ts[0].(map[string]any)["commands"].([]any)
			if len(ts) != 1 || len(cmds) != 2 || cmds[0].(map[string]any)["action"] != "trip" || cmds[0].(map[string]any)["reason"] != "p999 over budget" {
				t.Errorf("fuse %v, want the trip before the close", m)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body, m := get(t, c.store.Handler(), c.path)
			if code != c.code {
				t.Fatalf("GET %s: %d, want %d: %s", c.path, code, c.code, body)
			}
			if c.check != nil {
				c.check(t, body, m)
			}
		})
	}
}

// TestStoreBounds feeds more series, points, targets and commands than
// the limits and checks that the store keeps the newest within them.
func TestStoreBounds(t *testing.T) {
	s := newTestStore(t, Config{MaxSeries: 3, MaxPoints: 4, MaxTargets: 2, MaxCommands: 3})
	ctx := context.Background()
	for i := range 5 {
		k := schemas.Key{Tenant: string(rune('a' + i)), Service: "s", Model: "m"}
		for j := range 10 {
			_ = s.Write(ctx, schemas.Output{Verdicts: []schemas.Verdict{tailVerdict(k, int64(j)*minute, float64(j), schemas.StatusOK)},
				Commands: []schemas.FuseCommand{{Target: k, Action: schemas.ActionTrip, State: schemas.StateOpen, Version: uint64(j), IssuedAtUnixNano: int64(j) * minute}}})
		}
	}
	// A replay of an evaluation replaces its point; an older one is
	// inserted in order (and falls out again as the oldest).
	e := schemas.Key{Tenant: "e", Service: "s", Model: "m"}
	_ = s.Write(ctx, schemas.Output{Verdicts: []schemas.Verdict{tailVerdict(e, 9*minute, 99, schemas.StatusBreach), tailVerdict(e, 7*minute-1e6, 1, schemas.StatusOK)}})
	kr := s.Keys()
	if kr.Series != 3 || kr.DroppedSeries != 2 || kr.Targets != 2 || kr.DroppedTargets != 3 || kr.Verdicts != 52 {
		t.Fatalf("keys %+v, want 3 series (2 dropped), 2 targets (3 dropped), 52 verdicts", kr)
	}
	if got := kr.Keys[0].Key.Tenant; got != "c" {
		t.Errorf("oldest kept key %q, want c (a and b evicted)", got)
	}
	r, ok := s.Key(e)
	if !ok {
		t.Fatal("no series for e")
	}
	pts := r.Series[0].Points
	if len(pts) != 4 || pts[0].T != 7*minute/1e6-1 || pts[1].T != 7*minute/1e6 || pts[3].Value != 99 || pts[3].Status != "breach" {
		t.Errorf("points %+v, want 4: the inserted 6:59.999, 7, 8, and 9 replaced", pts)
	}
	f := s.Fuse()
	if len(f.Targets) != 2 || len(f.Targets[0].Commands) != 3 || f.Targets[0].Commands[0].Version != 7 {
		t.Errorf("fuse %+v, want 2 targets of the newest 3 commands", f)
	}
	if _, err := NewStore(Config{MaxPoints: -1}); err == nil || !strings.Contains(err.Error(), "MaxPoints") {
		t.Errorf("NewStore(MaxPoints -1): %v, want an error naming MaxPoints", err)
	}
}

// TestStoreMemoryBounded fills a store with the defaults far beyond its
// bounds (every series with full drift and tail evidence, ids and details
// as large as the processors write) and checks the heap it holds stays
// under the figure of docs/running.md (the live page).
func TestStoreMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 1.5 million points")
	}
	xs := make([]float64, 1000)
	for i := range xs {
		xs[i] = float64(i)
	}
	ev := &schemas.Evidence{Current: schemas.ECDFPoints(xs, 64), Reference: schemas.ECDFPoints(xs, 64), Exceedances: schemas.PlottingPoints(xs, 64)}
	details := make([]schemas.Detail, 10)
	for i := range details {
		details[i] = schemas.Detail{Name: "detail_name", Value: 1}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := newTestStore(t, Config{})
	ctx := context.Background()
	// The first evaluation has twice the keys the store keeps (evictions),
	// then the newest MaxSeries keys fill their series beyond MaxPoints.
	const keys, evals = 2 * DefaultMaxSeries, DefaultMaxPoints + 20
	for j := range evals {
		out := schemas.Output{Verdicts: make([]schemas.Verdict, 0, keys), Commands: make([]schemas.FuseCommand, 0, keys)}
		from := 0
		if j > 0 {
			from = keys - DefaultMaxSeries
		}
		for i := from; i < keys; i++ {
			k := schemas.Key{Tenant: fmt.Sprintf("tenant-%04d", i), Service: "service", Model: "model", Variant: "baseline"}
			v := tailVerdict(k, int64(j)*minute, 1, schemas.StatusOK)
			v.ID = fmt.Sprintf("%032x", i*evals+j)
			v.Details, v.Evidence = details, ev
			if j == evals-1 {
				// The latest verdict of each series is kept with its own
				// evidence, as the processors give each verdict its own.
				e := *ev
				e.Current.X, e.Reference.X, e.Exceedances.X = slices.Clone(ev.Current.X), slices.Clone(ev.Reference.X), slices.Clone(ev.Exceedances.X)
				e.Current.P, e.Reference.P, e.Exceedances.P = slices.Clone(ev.Current.P), slices.Clone(ev.Reference.P), slices.Clone(ev.Exceedances.P)
				v.Evidence, v.Details = &e, slices.Clone(details)
			}
			out.Verdicts = append(out.Verdicts, v)
			out.Commands = append(out.Commands, schemas.FuseCommand{Target: k, Action: schemas.ActionTrip, State: schemas.StateOpen,
				Version: uint64(j), IssuedAtUnixNano: int64(j) * minute, Reasons: []schemas.Reason{{Text: fmt.Sprintf("reason %d", j)}},
				CorrelationIDs: []string{fmt.Sprintf("%032x", i*evals+j), "slo:latency"}})
		}
		_ = s.Write(ctx, out)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	kr := s.Keys()
	t.Logf("%d verdicts, %d commands in: the store holds %d series, %d targets, %.1f MiB of heap", kr.Verdicts, kr.Commands, kr.Series, kr.Targets, float64(held)/(1<<20))
	if kr.Series != DefaultMaxSeries || kr.Targets != DefaultMaxTargets {
		t.Fatalf("store %+v", kr)
	}
	r, _ := s.Key(schemas.Key{Tenant: fmt.Sprintf("tenant-%04d", keys-1), Service: "service", Model: "model", Variant: "baseline"})
	if len(r.Series) != 1 || len(r.Series[0].Points) != DefaultMaxPoints {
		t.Fatalf("the newest key's series: %+v, want %d points", r.Series, DefaultMaxPoints)
	}
	if held > 16<<20 {
		t.Errorf("the full store holds %.1f MiB, more than 16 MiB", float64(held)/(1<<20))
	}
	runtime.KeepAlive(s)
}
