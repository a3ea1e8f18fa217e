package config

import (
	"strings"
	"testing"
)

const burnrateSLO = `
slos:
  - name: avail
    burnrate:
      target: 0.999
`

// TestAnswersErrorsNameFieldAndLine: a bad answers section and a bad
// bad_events are reported with the file's line and the field.
func TestAnswersErrorsNameFieldAndLine(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"empty reason", "answers:\n  failed_finish_reasons: [length, \"\"]\n" + burnrateSLO,
			[]string{"x.yaml:2: answers.failed_finish_reasons[1]: must not be empty"}},
		{"alias twice", "answers:\n  failed_finish_reasons:\n    - length\n    - MAX_TOKENS\n" + burnrateSLO,
			[]string{`x.yaml:4: answers.failed_finish_reasons[1]: "MAX_TOKENS" is "length", listed already as [0]`}},
		{"null reasons", "answers:\n  failed_finish_reasons:\n  empty_output: true\n" + burnrateSLO,
			[]string{"x.yaml:2: answers.failed_finish_reasons: is null"}},
		{"typo", "answers:\n  failed_reasons: [length]\n" + burnrateSLO,
			[]string{"x.yaml:2: answers.failed_reasons: unknown field"}},
		{"unknown bad event", "slos:\n  - name: avail\n    burnrate:\n      bad_events: [errors, empty]\n",
			[]string{`x.yaml:4: slos[0].burnrate.bad_events[1]: must be errors or failed_answers, got "empty"`}},
		{"no bad event", "slos:\n  - name: avail\n    burnrate:\n      bad_events: []\n",
			[]string{"x.yaml:4: slos[0].burnrate.bad_events: list at least one of errors, failed_answers"}},
		{"failed answers defined as none", "answers:\n  failed_finish_reasons: []\n  empty_output: false\nslos:\n  - name: avail\n    burnrate:\n      bad_events: [errors, failed_answers]\n",
			[]string{"x.yaml:7: slos[0].burnrate.bad_events: counts failed_answers, but answers defines none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestAnswersKeepVersionAndStateIDs: the default answers section (written
// out, its aliases or left out) and the default bad_events keep the
// configuration version and every state id; a changed section changes
// the version and the id of an SLO counting failed answers, not those of
// the other SLOs nor the rollups' (whose reset would undercount the open
// minute of every key).
func TestAnswersKeepVersionAndStateIDs(t *testing.T) {
	parse := func(y string) *File {
		t.Helper()
		f, err := Parse("x.yaml", []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	const two = `
slos:
  - name: avail
    burnrate: {target: 0.999}
  - name: answers
    burnrate: {target: 0.999, bad_events: [errors, failed_answers]}
`
	base := parse(burnrateSLO)
	for _, y := range []string{
		"answers:\n  failed_finish_reasons: [length, content_filter]\n  empty_output: true\n" + burnrateSLO,
		"answers:\n  failed_finish_reasons: [SAFETY, max_tokens]\n" + burnrateSLO,
		strings.Replace(burnrateSLO, "target: 0.999", "target: 0.999\n      bad_events: [errors]", 1),
	} {
		f := parse(y)
		if f.Version != base.Version || StateID(f, f.SLOs[0]) != StateID(base, base.SLOs[0]) || rollupStateID(f) != rollupStateID(base) {
			t.Errorf("default answers / bad_events changed the version or a state id:\n%s", y)
		}
	}
	changed := parse("answers:\n  failed_finish_reasons: [content_filter]\n" + burnrateSLO)
	if changed.Version == base.Version {
		t.Error("a changed answers section kept the version")
	}
	if rollupStateID(changed) != rollupStateID(base) {
		t.Error("a changed answers section changed the rollups' state id: every key's open minute would reset")
	}
	if StateID(changed, changed.SLOs[0]) != StateID(base, base.SLOs[0]) {
		t.Error("a changed answers section changed the state id of an SLO that counts errors only")
	}
	if x, y := parse("answers:\n  failed_finish_reasons: [content_filter]\n"+two), parse("answers:\n  failed_finish_reasons: [SAFETY]\n"+two); x.Version != y.Version ||
		StateID(x, x.SLOs[1]) != StateID(y, y.SLOs[1]) || rollupStateID(x) != rollupStateID(y) {
		t.Error("an alias (SAFETY for content_filter) changed the version or a state id")
	}
	a, b := parse(two), parse("answers:\n  empty_output: false\n"+two)
	if StateID(a, a.SLOs[0]) != StateID(b, b.SLOs[0]) || StateID(a, a.SLOs[1]) == StateID(b, b.SLOs[1]) {
		t.Error("answers section: want the failed_answers SLO's state id changed, the other's kept")
	}
	if StateID(a, a.SLOs[1]) == StateID(a, a.SLOs[0]) {
		t.Error("bad_events [errors, failed_answers] kept the errors-only state id")
	}
}

// TestBadEventsOrderKeepsIDs: the order bad_events is written in changes
// neither the configuration version nor the state id.
func TestBadEventsOrderKeepsIDs(t *testing.T) {
	parse := func(bad string) *File {
		t.Helper()
		f, err := Parse("x.yaml", []byte("slos:\n  - name: avail\n    burnrate: {target: 0.999, bad_events: "+bad+"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	a, b := parse("[failed_answers, errors]"), parse("[errors, failed_answers]")
	if a.Version != b.Version {
		t.Errorf("config version %s for [failed_answers, errors], %s for [errors, failed_answers]", a.Version, b.Version)
	}
	if x, y := StateID(a, a.SLOs[0]), StateID(b, b.SLOs[0]); x != y {
		t.Errorf("state id %s for [failed_answers, errors], %s for [errors, failed_answers]", x, y)
	}
	if c := parse("[errors]"); c.Version == a.Version || StateID(c, c.SLOs[0]) == StateID(a, a.SLOs[0]) {
		t.Error("[errors] and [errors, failed_answers] share the version or the state id")
	}
}
