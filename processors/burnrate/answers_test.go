package burnrate

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// filterStorm is 100 calls per minute for each of two keys over 3 hours:
// on the storm key every call succeeds (no error status, no error.type);
// on both keys 1 in 2000 of the successful calls ends with finish reason
// length (half the budget of a 99.9% SLO), the rest stop; from 2h30m the
// storm key's calls get finish reason content_filter (and 0 output
// tokens) with probability 0.3 for 20 minutes; throughout, 1 in 100 of the
// healthy key's calls are errors (burn ~10: valid traffic beside the
// storm that stays below the fast page's 14.4 and is no incident).
func filterStorm(r *rand.Rand, t0 int64) (storm, healthy schemas.Key, spans []schemas.Span) {
	storm = schemas.Key{Tenant: "acme", Service: "chat", Model: "gpt-4o", Variant: ""}
	healthy = schemas.Key{Tenant: "acme", Service: "chat", Model: "claude", Variant: ""}
	incident := t0 + 150*minute
	for m := range 180 {
		for _, k := range []schemas.Key{storm, healthy} {
			for range 100 {
				end := t0 + int64(m)*minute + r.Int64N(minute)
				s := schemas.Span{Key: k, StartUnixNano: end - 2e8, EndUnixNano: end, DurationMs: 200, FinishReason: "stop",
					OutputTokens: 40, Has: schemas.HasOutputTokens, Operation: "chat"}
				switch {
				case k == storm && end >= incident && end < incident+20*minute && r.Float64() < 0.3:
					s.FinishReason, s.OutputTokens = "content_filter", 0
				case k == healthy && r.Float64() < 0.01:
					s.Error, s.ErrorType = true, "timeout"
				case r.Float64() < 0.0005:
					s.FinishReason = "length"
				}
				spans = append(spans, s)
			}
		}
	}
	return storm, healthy, sorted(spans)
}

// TestFailedAnswersTripWhereConfigured: a content_filter storm (the calls
// succeed) breaches the fast page (14.4× over 1h and 5m) of an SLO with
// bad_events [errors, failed_answers] within minutes, with the details
// counting the failed answers; the healthy key beside it, with 1% errors
// (burn ~10), stays ok throughout and its details count those errors;
// the same SLO without bad_events (the default, errors only) does not
// trip.
func TestFailedAnswersTripWhereConfigured(t *testing.T) {
	t0 := int64(1_700_000_000) / 60 * 60 * int64(time.Second)
	storm, healthy, spans := filterStorm(rand.New(rand.NewPCG(23, 23)), t0)
	incident := t0 + 150*minute

	cfg := DefaultConfig()
	cfg.Ticket = nil
	// The fast page only: the healthy key's burn ~10 is above the slow
	// page's 6× (a real, slow burn), below the fast page's 14.4×.
	cfg.Page = cfg.Page[:1]
	errorsOnly := cfg
	cfg.BadEvents = []string{BadErrors, BadFailedAnswers}
	vs := run(t, cfg, spans, t0, 180)
	var firstBreach int64
	var healthyErrors float64
	for _, v := range vs {
		if v.Metric != MetricPage {
			continue
		}
		if v.Key == healthy && v.Status != schemas.StatusOK && v.Status != schemas.StatusInsufficientData {
			t.Fatalf("healthy key: %s at minute %d", v.Status, (v.WindowEndUnixNano-t0)/minute)
		}
		if v.Key == healthy {
			healthyErrors = max(healthyErrors, details(v)["errors_1h"])
		}
		if v.Key == storm && v.Status == schemas.StatusBreach && firstBreach == 0 {
			firstBreach = v.WindowEndUnixNano
			d := details(v)
			if !(d["failed_answers_1h"] >= 5) || d["errors_1h"] != 0 || d["failed_answers_1h"] > d["calls_1h"] {
				t.Errorf("breach details %v: want failed_answers_1h >= 5, errors_1h 0", d)
			}
		}
		if v.Key == storm && v.WindowEndUnixNano < incident && v.Status == schemas.StatusBreach {
			t.Fatalf("storm key breached before the storm, minute %d", (v.WindowEndUnixNano-t0)/minute)
		}
	}
	if firstBreach == 0 {
		t.Fatal("the content_filter storm never breached the page")
	}
	if lag := time.Duration(firstBreach - incident); lag > 5*time.Minute {
		t.Errorf("breach %v after the storm began, want within 5m", lag)
	}
	// 1% of 6000 calls an hour: ~60 errors in the healthy key's 1h window.
	if healthyErrors < 30 {
		t.Errorf("healthy key: errors_1h at most %v, want its ~60 errors an hour counted", healthyErrors)
	}

	// Not configured: the same traffic never trips (the storm's calls
	// succeeded; the healthy key's errors burn below 14.4), and the
	// default verdicts carry no split details.
	for _, v := range run(t, errorsOnly, spans, t0, 180) {
		if v.Status == schemas.StatusBreach || v.Status == schemas.StatusWarn {
			t.Fatalf("errors-only SLO: %s on %v at minute %d", v.Status, v.Key, (v.WindowEndUnixNano-t0)/minute)
		}
		for _, d := range v.Details {
			if strings.HasPrefix(d.Name, "failed_answers_") || strings.HasPrefix(d.Name, "errors_") {
				t.Fatalf("default verdict has detail %s", d.Name)
			}
		}
	}
}

func details(v schemas.Verdict) map[string]float64 {
	m := map[string]float64{}
	for _, d := range v.Details {
		m[d.Name] = d.Value
	}
	return m
}

// TestBadEventsSplitCountsAndSnapshot: with [errors, failed_answers], the
// details count each kind over each long window, also after a snapshot
// round trip (the split rings are in it); with [failed_answers] alone,
// errors are good events; a custom answers definition (Meta.Answers) is
// what classifies.
func TestBadEventsSplitCountsAndSnapshot(t *testing.T) {
	t0 := int64(1_700_000_000) / 60 * 60 * int64(time.Second)
	var spans []schemas.Span
	for m := range 120 {
		for i := range 100 {
			end := t0 + int64(m)*minute + int64(i)*int64(time.Second/2)
			s := schemas.Span{Key: key, StartUnixNano: end - 1e8, EndUnixNano: end, DurationMs: 100, FinishReason: "stop"}
			switch i {
			case 0:
				s.Error = true
			case 1:
				s.FinishReason = "MAX_TOKENS"
			case 2:
				s.FinishReason = "tool_calls" // a failed answer only under the custom rule
			}
			spans = append(spans, s)
		}
	}
	cfg := DefaultConfig()
	cfg.Ticket = nil
	cfg.BadEvents = []string{BadErrors, BadFailedAnswers}
	_, vs := runRestoredAt(t, cfg, spans, t0, 120, 61)
	last := details(vs[len(vs)-1])
	if last["errors_1h"] != 60 || last["failed_answers_1h"] != 60 || last["errors_6h"] != 120 || last["failed_answers_6h"] != 120 {
		t.Errorf("details after restore %v: want 60 and 60 in 1h, 120 and 120 in 6h", last)
	}
	if b := last["burn_1h"]; b < 19.9 || b > 20.1 {
		t.Errorf("burn_1h %v, want 20 (2%% bad at a 0.1%% budget)", b)
	}

	cfg.BadEvents = []string{BadFailedAnswers}
	p, _ := New(processors.Meta{SLO: "answers", ConfigVersion: "v1",
		Answers: schemas.Answers{FailedFinishReasons: []string{"length", "tool_calls"}}.Rule()}, cfg)
	var out proctest.Collector
	for i := range spans {
		p.ObserveSpan(spans[i].Key, &spans[i])
	}
	p.Evaluate(t0+120*minute, &out)
	d := details(out.Verdicts[0])
	if d["errors_1h"] != 0 || d["failed_answers_1h"] != 120 || d["burn_1h"] < 19.9 || d["burn_1h"] > 20.1 {
		t.Errorf("failed_answers only, custom rule: %v; want 0 errors, 120 failed answers, burn 20", d)
	}
}

func TestBadEventsValidate(t *testing.T) {
	for _, c := range []struct {
		bad  []string
		want string
	}{
		{[]string{}, "bad_events: list at least one"},
		{[]string{"errors", "timeouts"}, `bad_events[1]: must be errors or failed_answers, got "timeouts"`},
		{[]string{"failed_answers", "failed_answers"}, `bad_events[1]: "failed_answers" is listed twice`},
	} {
		cfg := DefaultConfig()
		cfg.BadEvents = c.bad
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.bad, err, c.want)
		}
	}
}

// TestDefaultBadEventsKeepIDs: the default bad_events leaves the
// configuration hash and the state shape as they were (every existing
// verdict id and state id stays); failed_answers changes both.
func TestDefaultBadEventsKeepIDs(t *testing.T) {
	cfg := DefaultConfig()
	unset := DefaultConfig()
	unset.BadEvents = nil
	a, _ := cfg.MarshalJSON()
	b, _ := unset.MarshalJSON()
	if string(a) != string(b) || strings.Contains(string(a), `"BadEvents"`) {
		t.Errorf("default hash view %s, unset %s", a, b)
	}
	if got := len(cfg.StateShape().([]any)); got != 3 {
		t.Errorf("default state shape has %d parts, want the 3 of before", got)
	}
	cfg.BadEvents = []string{BadErrors, BadFailedAnswers}
	c, _ := cfg.MarshalJSON()
	if string(c) == string(a) || len(cfg.StateShape().([]any)) != 4 || !cfg.UsesAnswers() {
		t.Errorf("failed_answers: hash view %s, shape %v", c, cfg.StateShape())
	}
	// The order bad_events is written in changes neither.
	rev := DefaultConfig()
	rev.BadEvents = []string{BadFailedAnswers, BadErrors}
	d, _ := rev.MarshalJSON()
	if string(d) != string(c) || fmt.Sprint(rev.StateShape()) != fmt.Sprint(cfg.StateShape()) {
		t.Errorf("[failed_answers, errors]: hash view %s, shape %v; [errors, failed_answers]: %s, %v", d, rev.StateShape(), c, cfg.StateShape())
	}
	if rev.BadEvents[0] != BadFailedAnswers {
		t.Errorf("hashing reordered the config's own bad_events: %v", rev.BadEvents)
	}
	def := DefaultConfig()
	if sum := cfg.Summary(); !strings.HasSuffix(sum, "; bad events errors, failed_answers") || strings.Contains(def.Summary(), "bad events") {
		t.Errorf("summary %q: want the bad events named (and not in the default's)", sum)
	}
}
