package effect_test

import (
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
)

// TestRefreshOfADecidedHalfOpenIsNotJudged: the breaker refreshes a
// half-open (the same command re-issued, every command_ttl/2) for as long
// as it lasts; once the half-open's judgement is decided its refreshes are
// still refreshes, not new half-opens to judge again (one half_open effect
// verdict per half-open), until a command of another state comes.
func TestRefreshOfADecidedHalfOpenIsNotJudged(t *testing.T) {
	j := newJudge(t, 2)
	cause := verdict(failing, t0, schemas.StatusBreach, 9000, 500)
	halfOpen := func(version uint64, at int64) step {
		return step{at: at, cmds: []schemas.FuseCommand{command(failing, schemas.ActionHalfOpen, schemas.StateHalfOpen, version, at, cause)}}
	}
	out := run(j, []step{
		tripped(schemas.ActionTrip, failing),
		halfOpen(8, t0+5*minute),
		after(6, v(failing, schemas.StatusBreach, 8000, 40)),
		after(7, v(failing, schemas.StatusBreach, 7000, 40)), // the half-open: not recovered after 2
		halfOpen(9, t0+13*minute),                            // refreshes, after the judgement
		after(14, v(failing, schemas.StatusBreach, 7000, 40)),
		after(15, v(failing, schemas.StatusBreach, 7000, 40)),
		halfOpen(10, t0+21*minute),
		after(22, v(failing, schemas.StatusBreach, 7000, 40)),
		after(23, v(failing, schemas.StatusBreach, 7000, 40)),
	})
	var probes []string
	for _, v := range out {
		if strings.HasPrefix(v.Method, "half_open:") {
			probes = append(probes, v.Method)
		}
	}
	if len(probes) != 1 || probes[0] != "half_open:not_recovered" {
		t.Fatalf("half-open effect verdicts %v, want one half_open:not_recovered (the refreshes are not judged); all: %s", probes, show(out))
	}
	if st := j.Stats(); st.Refreshes != 2 {
		t.Fatalf("stats %+v, want the two refreshes counted as such", st)
	}
	// A trip of the target ends the half-open: its next half-open is
	// judged again.
	trip := command(failing, schemas.ActionTrip, schemas.StateOpen, 11, t0+24*minute, verdict(failing, t0+24*minute, schemas.StatusBreach, 9000, 40))
	out = run(j, []step{
		{at: t0 + 24*minute, verdicts: []schemas.Verdict{verdict(failing, t0+24*minute, schemas.StatusBreach, 9000, 40)}, cmds: []schemas.FuseCommand{trip}},
		halfOpen(12, t0+29*minute),
		after(30, v(failing, schemas.StatusOK, 900, 40)),
		after(31, v(failing, schemas.StatusOK, 900, 40)),
	})
	n := 0
	for _, v := range out {
		if strings.HasPrefix(v.Method, "half_open:") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the half-open after a re-trip: %d half_open verdicts, want 1; all: %s", n, show(out))
	}
}
