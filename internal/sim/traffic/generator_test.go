package traffic

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func gen(t *testing.T, sc Scenario, d time.Duration) []Batch {
	t.Helper()
	g, err := New(sc, time.Unix(1_700_000_000, 0))
	if err != nil {
		t.Fatal(err)
	}
	var out []Batch
	for g.Offset() < d {
		out = append(out, g.Next(time.Second))
	}
	return out
}

func TestDeterministicAndValid(t *testing.T) {
	sc := Demo()
	a := gen(t, sc, 2*time.Minute)
	b := gen(t, sc, 2*time.Minute)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same scenario and seed gave different traffic")
	}
	n, corr := 0, 0
	for _, bt := range a {
		for i := range bt.Spans {
			if err := bt.Spans[i].Validate(); err != nil {
				t.Fatalf("generated span invalid: %v", err)
			}
		}
		for _, o := range bt.Other {
			if o.Key.Model != "" {
				t.Fatal("non-LLM span carries a model")
			}
		}
		n += len(bt.Spans)
		corr += len(bt.Corrections)
	}
	if want := int(sc.Rate * 120); n != want {
		t.Fatalf("%d calls in 2 minutes at %v/s, want %d", n, sc.Rate, want)
	}
	if corr == 0 {
		t.Fatal("no corrections")
	}
	sc.Seed++
	if reflect.DeepEqual(gen(t, sc, time.Minute), a[:60]) {
		t.Fatal("another seed gave the same traffic")
	}
}

func TestIncidentsChangeTheirTarget(t *testing.T) {
	sc := Demo()
	sc.Incidents = []Incident{{Kind: TailBlowup, Start: time.Minute, End: 3 * time.Minute, Target: Target{Tenant: "acme"}, Magnitude: 0.05}}
	var before, during []float64
	for i, bt := range gen(t, sc, 3*time.Minute) {
		for _, s := range bt.Spans {
			if s.Key.Tenant != "acme" {
				continue
			}
			if i < 60 {
				before = append(before, s.DurationMs)
			} else {
				during = append(during, s.DurationMs)
			}
		}
	}
	q := func(xs []float64, p float64) float64 { slices.Sort(xs); return xs[int(p*float64(len(xs)))] }
	if q(during, 0.999) < 3*q(before, 0.999) || q(during, 0.5) > 1.3*q(before, 0.5) {
		t.Fatalf("tail blowup: p99.9 %v -> %v, median %v -> %v", q(before, 0.999), q(during, 0.999), q(before, 0.5), q(during, 0.5))
	}
}

func TestValidateNamesField(t *testing.T) {
	sc := Demo()
	sc.Rate = 0
	sc.Incidents[0].Kind = "meteor"
	err := sc.Validate()
	if err == nil || !strings.Contains(err.Error(), "rate") || !strings.Contains(err.Error(), "incidents[0].kind") {
		t.Fatalf("error %v", err)
	}
}
