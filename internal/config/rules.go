package config

import (
	"slices"
	"strconv"
	"strings"

	"github.com/fusebox-dev/fusebox/processors/registry"
)

// validateRules checks that every breaker rule can fire: its processor is
// a kind of all (the Loader's kinds: processors/registry, the one list of
// kinds and of the verdict metrics each emits), some SLO of the file runs
// that kind,
// its slo (when set) names such an SLO, and its metric (when set) is one
// those SLOs emit. A misspelling gets a did-you-mean. explicit is false
// when the file has no breaker.rules and the defaults apply: default rules
// for kinds no SLO runs are then simply inert, not an error.
func (f *File) validateRules(all registry.List, explicit bool) []fieldErr {
	var errs []fieldErr
	kinds := map[string][]string{} // kind → the SLOs that run it, in file order
	sloKind := map[string]string{}
	metricsOf := map[string][]string{} // SLO → its verdict metrics
	for _, s := range f.SLOs {
		sec, ok := s.Processor()
		if !ok {
			continue // reported by validate
		}
		kinds[sec.Kind.Name] = append(kinds[sec.Kind.Name], s.Name)
		sloKind[s.Name] = sec.Kind.Name
		metricsOf[s.Name] = sec.Kind.Metrics(sec.Config)
	}
	sloNames := make([]string, 0, len(f.SLOs))
	for _, s := range f.SLOs {
		sloNames = append(sloNames, s.Name)
	}
	for i, r := range f.Breaker.Rules {
		p := "breaker.rules[" + strconv.Itoa(i) + "]."
		fail := func(field, reason string) { errs = append(errs, fieldErr{p + field, reason}) }
		if r.Processor == "" {
			continue // required: reported by the policy's Validate
		}
		if _, ok := all.Lookup(r.Processor); !ok {
			fail("processor", "unknown processor "+strconv.Quote(r.Processor)+didYouMean(r.Processor, all.Names())+
				"; the processors are "+orList(all.Names()))
			continue
		}
		slos := kinds[r.Processor]
		if len(slos) == 0 {
			if explicit {
				fail("processor", "no SLO runs processor "+r.Processor+": the rule can never fire"+runs(all, kinds))
			}
			continue
		}
		if r.SLO != "" {
			switch k, ok := sloKind[r.SLO]; {
			case !ok:
				fail("slo", "no SLO named "+strconv.Quote(r.SLO)+didYouMean(r.SLO, sloNames)+"; the "+r.Processor+" SLOs are "+orList(slos))
				continue
			case k != r.Processor:
				fail("slo", "SLO "+strconv.Quote(r.SLO)+" runs "+k+", not "+r.Processor+": the rule can never fire; the "+r.Processor+" SLOs are "+orList(slos))
				continue
			}
			slos = []string{r.SLO}
		}
		if r.Metric != "" {
			var ms []string
			for _, s := range slos {
				for _, m := range metricsOf[s] {
					if !slices.Contains(ms, m) {
						ms = append(ms, m)
					}
				}
			}
			if !slices.Contains(ms, r.Metric) {
				fail("metric", "no "+strings.Join(slos, ", ")+" verdict has metric "+strconv.Quote(r.Metric)+didYouMean(r.Metric, ms)+
					"; they emit "+orList(ms))
			}
		}
	}
	return errs
}

// didYouMean is " (did you mean x?)" for the names within edit distance 2
// of s, or "".
func didYouMean(s string, names []string) string {
	var near []string
	for _, n := range names {
		if n != s && closeTo(s, n) {
			near = append(near, n)
		}
	}
	if len(near) == 0 {
		return ""
	}
	return " (did you mean " + strings.Join(near, " or ") + "?)"
}

// runs lists which processors the SLOs run, for an error message.
func runs(all registry.List, kinds map[string][]string) string {
	var have []string
	for _, n := range all.Names() {
		if len(kinds[n]) > 0 {
			have = append(have, n+" ("+strings.Join(kinds[n], ", ")+")")
		}
	}
	if len(have) == 0 {
		return ""
	}
	return "; the SLOs run " + strings.Join(have, ", ")
}
