package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestIncidentsSection: its errors name the file, the line and the field;
// enabled, it turns the workers' summaries on and makes the commands'
// SLOs attributed; it does not change the config version (it decides no
// verdict).
func TestIncidentsSection(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown slo", "incidents:\n  enabled: true\n  slos: [nope]\n", "x.yaml:3: incidents.slos[0]: no SLO named \"nope\""},
		{"alpha", "incidents:\n  enabled: true\n  alpha: 2\n", "x.yaml:3: incidents.alpha: must be in (0, 1), got 2"},
		{"min keys", "incidents:\n  min_keys: 1\n", "x.yaml:2: incidents.min_keys: must be at least 2"},
		{"max wait", "incidents:\n  max_wait: -1\n", "x.yaml:2: incidents.max_wait: must be positive, got -1"},
		{"command slo", "incidents:\n  enabled: true\n  commands:\n    - {slo: nope}\n", "x.yaml:4: incidents.commands[0].slo: no SLO named \"nope\""},
		{"action", "incidents:\n  enabled: true\n  commands:\n    - {slo: lat, action: explode}\n", "incidents.commands[0].action: must be trip, degrade, throttle or rollback"},
		{"not attributed", "incidents:\n  enabled: true\n  slos: [lat2]\n  commands:\n    - {slo: lat}\n", "incidents.commands[0].slo: \"lat\" is not in incidents.slos"},
		{"degrade", "incidents:\n  enabled: true\n  commands:\n    - {slo: lat, action: degrade}\n", "incidents.commands[0].fallback: degrade needs a fallback model"},
	} {
		_, err := Parse("x.yaml", []byte(tc.yaml+incidentsMinimal))
		var e *Error
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &e) {
			t.Errorf("%s: %v, want a *config.Error with %q", tc.name, err, tc.want)
		}
	}
	base, err := Parse("x.yaml", []byte(incidentsMinimal))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse("x.yaml", []byte("incidents:\n  enabled: true\n  providers: {m: p}\n  commands:\n    - {slo: lat, ttl: 5m}\n"+incidentsMinimal))
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != base.Version {
		t.Errorf("the incidents section changed the version: %s -> %s", base.Version, f.Version)
	}
	if f.Topics.Summaries != "fusebox.summaries" {
		t.Errorf("topics.summaries %q", f.Topics.Summaries)
	}
	wc, err := WorkerConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	if !wc.Summaries || !slices.Equal(wc.AttributedSLOs, []string{"lat"}) {
		t.Errorf("worker: summaries %v, attributed %v", wc.Summaries, wc.AttributedSLOs)
	}
	sc := IncidentStage(f, 12)
	if sc.Partitions != 12 || sc.Providers["m"] != "p" || len(sc.Commands) != 1 || sc.Commands[0].TTL != 5*time.Minute || sc.Commands[0].Action != "" {
		t.Errorf("stage config %+v", sc)
	}
	if wc, _ := WorkerConfig(base); wc.Summaries || wc.AttributedSLOs != nil {
		t.Errorf("without the section: summaries %v, attributed %v", wc.Summaries, wc.AttributedSLOs)
	}
	// Commands without the stage are inert: the breaker keeps its commands.
	off, err := Parse("x.yaml", []byte("incidents:\n  commands:\n    - {slo: lat}\n"+incidentsMinimal))
	if err != nil {
		t.Fatal(err)
	}
	if wc, _ := WorkerConfig(off); wc.Summaries || wc.AttributedSLOs != nil {
		t.Errorf("commands, not enabled: summaries %v, attributed %v", wc.Summaries, wc.AttributedSLOs)
	}
}

const incidentsMinimal = `kafka: {brokers: ["localhost:9092"]}
slos:
  - name: lat
    tail: {budget: 1000}
  - name: lat2
    tail: {budget: 2000}
`

// TestIncidentsRefuseMixedCadences: a drift SLO at its defaults runs ks
// every minute and cusum and slice every 15 s; the incident stage reads
// one boundary's verdicts as the SLO's state, so attributing it is an
// error that names the SLO and the fix — with incidents.slos empty (all
// SLOs) and with the SLO listed — while a drift SLO of one cadence, or
// one left out of incidents.slos, is accepted.
func TestIncidentsRefuseMixedCadences(t *testing.T) {
	const slos = `kafka: {brokers: ["localhost:9092"]}
slos:
  - name: lat
    tail: {budget: 1000}
  - name: conf
    drift: {}
  - name: conf-ks
    drift: {detectors: [ks]}
`
	for _, tc := range []struct{ name, yaml, want string }{
		{"all SLOs", "incidents:\n  enabled: true\n", `incidents.slos: SLO "conf" evaluates every 15s but ks_confidence every 1m0s`},
		{"listed", "incidents:\n  enabled: true\n  slos: [lat, conf]\n", `x.yaml:3: incidents.slos[1]: SLO "conf" evaluates every 15s`},
	} {
		_, err := Parse("x.yaml", []byte(tc.yaml+slos))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "detectors: [ks]") {
			t.Errorf("%s: %v, want %q and the fix", tc.name, err, tc.want)
		}
	}
	for _, ok := range []string{
		"incidents:\n  enabled: true\n  slos: [lat, conf-ks]\n",
		"incidents:\n  enabled: false\n", // the stage off: nothing reads summaries
	} {
		if _, err := Parse("x.yaml", []byte(ok+slos)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}
