package incident

import (
	"fmt"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// TestLevelCommandSuppressesAndHandsBack: one command for the model's
// level when the incident opens, the per-key trip it covers suppressed
// (and a half-open of a target whose open never went out); when the
// incident closes, the level's close and the suppressed trip of the one
// key that still breaches, as its breaker issued it.
func TestLevelCommandSuppressesAndHandsBack(t *testing.T) {
	st, err := New(Config{Partitions: 1, Commands: []CommandRule{{SLO: "lat"}}})
	if err != nil {
		t.Fatal(err)
	}
	key := func(i int) schemas.Key {
		return schemas.Key{Tenant: fmt.Sprint("t", i), Service: "chat", Model: "m", Variant: "baseline"}
	}
	// keys: model m's 4 (those in bad breach) and 20 healthy of model o
	// (p = 1/C(24,4) = 9.4e-5 before Holm over the values tested).
	keys := func(bad ...int) []schemas.SummaryKey {
		var out []schemas.SummaryKey
		for i := 0; i < 4; i++ {
			k := schemas.SummaryKey{Key: key(i), Status: schemas.StatusOK}
			for _, b := range bad {
				if b == i {
					k.Status = schemas.StatusBreach
				}
			}
			out = append(out, k)
		}
		for i := 0; i < 20; i++ {
			out = append(out, schemas.SummaryKey{Key: schemas.Key{Tenant: fmt.Sprint("t", i), Service: "chat", Model: "o", Variant: "baseline"}, Status: schemas.StatusOK})
		}
		return out
	}
	trip := func(i int, at int64, state schemas.BreakerState) schemas.FuseCommand {
		return schemas.FuseCommand{Target: key(i), Action: schemas.ActionTrip, Level: 2, State: state, Version: uint64(at), IssuedAtUnixNano: at,
			ExpiresAtUnixNano: at + int64(15*time.Minute), Reasons: []schemas.Reason{{VerdictID: "v", Text: "3 of 10"}}, CorrelationIDs: []string{"b", "slo:lat"}}
	}
	add := func(at int64, ks []schemas.SummaryKey, cmds ...schemas.FuseCommand) schemas.Output {
		t.Helper()
		out, err := st.Add(schemas.EvalSummary{SLO: "lat", Processor: "tail", AtUnixNano: at * minute, Keys: ks, Commands: cmds})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := add(1, keys(0, 1, 2, 3)); len(out.Commands) != 0 || len(out.Incidents) != 0 { // open_after 2
		t.Fatalf("first attributed boundary: %+v", out)
	}
	out := add(2, keys(0, 1, 2, 3), trip(0, 2*minute, schemas.StateOpen))
	level := schemas.Key{Tenant: "*", Service: "*", Model: "m", Variant: "*"}
	if len(out.Commands) != 1 || out.Commands[0].Target != level || out.Commands[0].State != schemas.StateOpen || len(out.Incidents) != 1 ||
		out.Commands[0].CorrelationIDs[0] != out.Incidents[0].IncidentID || out.Commands[0].Reasons[0].VerdictID != out.Incidents[0].ID {
		t.Fatalf("opening: commands %+v, incidents %+v", out.Commands, out.Incidents)
	}
	if err := out.Commands[0].Validate(); err != nil {
		t.Fatalf("the level command does not validate: %v", err)
	}
	// Only t0 still breaches: no attribution (1 < min_keys); the
	// incident resolves and closes after 3 boundaries. A half-open of t1,
	// whose open never went out, is suppressed.
	for at := int64(3); at <= 4; at++ {
		var cmds []schemas.FuseCommand
		if at == 4 {
			cmds = append(cmds, trip(1, at*minute, schemas.StateHalfOpen))
		}
		if out := add(at, keys(0), cmds...); len(out.Commands) != 0 {
			t.Fatalf("boundary %d: commands %+v", at, out.Commands)
		}
	}
	out = add(5, keys(0))
	if len(out.Commands) != 2 || out.Commands[0].Target != level || out.Commands[0].State != schemas.StateClosed ||
		out.Commands[1].Target != key(0) || out.Commands[1].Version != uint64(2*minute) || out.Commands[1].State != schemas.StateOpen {
		t.Fatalf("closing: %+v", out.Commands)
	}
	if c := st.Stats().Commands; c.Issued != 2 || c.Suppressed != 2 || c.Forwarded != 1 {
		t.Errorf("counts %+v, want 2 issued, 2 suppressed, 1 forwarded", c)
	}
	// t0's breaker goes on: its commands pass now (its open went out).
	if out := add(6, keys(0), trip(0, 6*minute, schemas.StateHalfOpen)); len(out.Commands) != 1 || out.Commands[0].State != schemas.StateHalfOpen {
		t.Fatalf("after the close: %+v", out.Commands)
	}
	// What the stage follows is forgotten once it expired: t1's suppressed
	// half-open (issued at 4m, 15m TTL) and t0's forwarded target (last at
	// 6m) are still held at 18m and gone at 22m, when t0 went quiet.
	lat := st.slos["lat"]
	add(18, keys())
	if _, ok := lat.Held[key(1).String()]; !ok || lat.Forwarded[key(0).String()] == 0 {
		t.Fatalf("at 18m: held %v, forwarded %v; want t1 held and t0 forwarded", lat.Held, lat.Forwarded)
	}
	add(22, keys())
	if len(lat.Held) != 0 || len(lat.Forwarded) != 0 {
		t.Errorf("at 22m, every command expired: held %v, forwarded %v; want both empty", lat.Held, lat.Forwarded)
	}
}

// When the level's trip stops its traffic, its keys leave the summaries
// (insufficient_data): that is no evidence either way — the incident
// stays open and its command in effect (refreshed), and the effect is not
// "recovered" but no_traffic; once the keys come back healthy the
// incident resolves and closes.
func TestTripThatStopsTheTrafficKeepsTheIncident(t *testing.T) {
	st, _ := New(Config{Partitions: 1, Commands: []CommandRule{{SLO: "lat", TTL: 4 * time.Minute}}})
	mk := func(mBad, mPresent bool) []schemas.SummaryKey {
		var out []schemas.SummaryKey
		if mPresent {
			out = append(out, keysOf("t", "m", 4, map[bool]int{true: 4, false: 0}[mBad], false)...)
		}
		return append(out, keysOf("t", "o", 20, 0, false)...)
	}
	var all schemas.Output
	add := func(at int64, ks []schemas.SummaryKey) schemas.Output {
		t.Helper()
		o, err := st.Add(schemas.EvalSummary{SLO: "lat", Processor: "tail", AtUnixNano: at * minute, Keys: ks})
		if err != nil {
			t.Fatal(err)
		}
		all.Incidents = append(all.Incidents, o.Incidents...)
		all.Commands = append(all.Commands, o.Commands...)
		all.Verdicts = append(all.Verdicts, o.Verdicts...)
		return o
	}
	add(1, mk(true, true))
	add(2, mk(true, true)) // opens, the level command goes out
	for at := int64(3); at <= 13; at++ {
		add(at, mk(false, false)) // tripped: no traffic, no verdict of m
	}
	for _, r := range all.Incidents {
		if r.Status == schemas.IncidentClosed || r.Status == schemas.IncidentResolving {
			t.Fatalf("the incident %s at +%dm while its keys had no traffic", r.Status, r.AtUnixNano/minute)
		}
	}
	if len(all.Verdicts) != 1 || all.Verdicts[0].Method != "trip:no_traffic" || all.Verdicts[0].Status != schemas.StatusInsufficientData {
		t.Fatalf("effect verdicts %+v, want one trip:no_traffic", all.Verdicts)
	}
	opens := 0
	for _, c := range all.Commands {
		if c.State == schemas.StateOpen {
			opens++
		}
		if c.State == schemas.StateClosed {
			t.Fatalf("the level command closed at +%dm without evidence", c.IssuedAtUnixNano/minute)
		}
	}
	if opens < 3 { // the open and its refreshes every TTL/2 (2m)
		t.Fatalf("%d open commands, want the open and refreshes", opens)
	}
	for at := int64(14); at <= 16; at++ {
		add(at, mk(false, true)) // back, healthy
	}
	if last := all.Incidents[len(all.Incidents)-1]; last.Status != schemas.IncidentClosed {
		t.Fatalf("healthy again for 3 evaluations: %s", last.Status)
	}
}
