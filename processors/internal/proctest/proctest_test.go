package proctest

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
)

// logger is a processor that logs its calls.
type logger struct{ log []string }

func (l *logger) Interval() time.Duration { return 10 }
func (l *logger) ObserveSpan(_ schemas.Key, s *schemas.Span) {
	l.log = append(l.log, fmt.Sprint("s", s.EndUnixNano))
}
func (l *logger) ObserveCorrection(c *schemas.Correction) {
	l.log = append(l.log, fmt.Sprint("c", c.TimeUnixNano))
}
func (l *logger) Evaluate(now int64, _ processors.Emitter) {
	l.log = append(l.log, fmt.Sprint("E", now))
}
func (l *logger) Keys() int                      { return 0 }
func (l *logger) Hooks() processors.Hooks        { return processors.Hooks{} }
func (l *logger) MarshalBinary() ([]byte, error) { return nil, nil }
func (l *logger) UnmarshalBinary([]byte) error   { return nil }

func spansAt(ends ...int64) []schemas.Span {
	out := make([]schemas.Span, len(ends))
	for i, e := range ends {
		out[i].EndUnixNano = e
	}
	return out
}

func TestDrivers(t *testing.T) {
	spans := spansAt(3, 12, 11, 25, 40, 41)
	for _, tc := range []struct {
		name string
		run  func(p *logger) any
		want string
	}{
		// Boundaries 10, 20, 30 after the spans before them; the spans at
		// or after the last boundary are left to the caller...
		{"Feed", func(p *logger) any { return Feed(p, spans, 0, 30, &Collector{}) }, "s3 E10 s12 s11 E20 s25 E30 | 4"},
		// ...which Drive observes for the state.
		{"Drive", func(p *logger) any { return len(Drive(t, p, spans, 0, 30)) }, "s3 E10 s12 s11 E20 s25 E30 s40 s41 | 0"},
		// Replay from the boundary after the first span to the one after
		// the last, or to stop, and from a given index and boundary on.
		{"Replay", func(p *logger) any { return Replay(p, spans, 0, 0, 0, &Collector{}) }, "s3 E10 s12 s11 E20 s25 E30 E40 s40 s41 E50 | 6"},
		{"Replay stop", func(p *logger) any { return Replay(p, spans, 0, 0, 20, &Collector{}) }, "s3 E10 s12 s11 E20 | 3"},
		{"Replay resume", func(p *logger) any { return Replay(p, spans, 3, 30, 0, &Collector{}) }, "s25 E30 E40 s40 s41 E50 | 6"},
	} {
		p := &logger{}
		res := tc.run(p)
		got := strings.Join(p.log, " ") + " | " + fmt.Sprint(res)
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	evs := []Event{{T: 5, Span: &spans[0]}, {T: 15, Correction: &schemas.Correction{TimeUnixNano: 15}}}
	p := &logger{}
	FeedEvents(p, evs, 0, 20, &Collector{})
	if got := strings.Join(p.log, " "); got != "s3 E10 c15 E20" {
		t.Errorf("FeedEvents: %q", got)
	}
}

func TestShuffleWithinSlots(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var spans []schemas.Span
	for i := range 200 {
		spans = append(spans, NewSpan(r, schemas.Key{Tenant: "t"}, "x", int64(i)*7, 1))
	}
	sh := ShuffleWithinSlots(spans, 100, r)
	if slices.EqualFunc(sh, spans, func(a, b schemas.Span) bool { return a.SpanID == b.SpanID }) {
		t.Fatal("nothing moved")
	}
	for i := range sh {
		if sh[i].EndUnixNano/100 != spans[i].EndUnixNano/100 {
			t.Fatalf("span %d left its slot", i)
		}
	}
	SortByEnd(sh)
	if !slices.EqualFunc(sh, spans, func(a, b schemas.Span) bool { return a.SpanID == b.SpanID }) {
		t.Fatal("SortByEnd does not restore the order")
	}
}

func TestRendering(t *testing.T) {
	v := schemas.Verdict{Key: schemas.Key{Tenant: "a", Service: "s", Model: "m"}, Metric: "x", Status: schemas.StatusBreach,
		Value: 1.23456789, Threshold: 1, Lower: 1.1, Upper: 1.3, IntervalLevel: 0.95, N: 7, Method: "m1",
		WindowEndUnixNano: T0 + 61*Minute, Details: []schemas.Detail{{Name: "d", Value: 2}}}
	if got, want := Lines([]schemas.Verdict{v}, T0), "+061m a/s/m/ x breach v=1.23457 th=1 ci0.95=[1.1,1.3] n=7 m1 d=2\n"; got != want {
		t.Errorf("Lines:\n got %q\nwant %q", got, want)
	}
	if got, want := KVLines([]schemas.Verdict{v}, T0, true), "t=61m key=a/s/m/ metric=x status=breach value=1.235 threshold=1 interval=[1.1,1.3]@0.95 method=m1 n=7 d=2\n"; got != want {
		t.Errorf("KVLines:\n got %q\nwant %q", got, want)
	}
	if got := KVLines([]schemas.Verdict{v}, T0, false); strings.Contains(got, "interval") {
		t.Errorf("KVLines without interval: %q", got)
	}
}

// fussy accepts only its own snapshot, exactly.
type fussy struct{ logger }

var errBad = errors.New("bad")

func (f *fussy) UnmarshalBinary(b []byte) error {
	if string(b) != "state" {
		return errBad
	}
	return nil
}

func TestRejectsDamage(t *testing.T) {
	RejectsDamage(t, func() processors.Processor { return &fussy{} }, []byte("state"), errBad)
}

func TestWantConfigErrors(t *testing.T) {
	var c processors.Check
	c.Fail(true, "window", "must be positive")
	c.Fail(true, "mix", "unknown category colour")
	err := fmt.Errorf("slo x: %w", c.Err())
	if got := ConfigErrors(err); len(got) != 2 || got[0].Field != "window" || got[1].Field != "mix" {
		t.Fatalf("ConfigErrors: %v", got)
	}
	WantConfigErrors(t, err, "window", "mix: unknown category", "mix")
	if ConfigErrors(errors.New("plain")) != nil {
		t.Fatal("found a ConfigError in a plain error")
	}
}

func TestGoldenUpdateWritesThenCompares(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := flag.Set("update", "true"); err != nil {
		t.Fatal(err)
	}
	Golden(t, "x.txt", "a\nb\n") // creates testdata/golden/x.txt
	if err := flag.Set("update", "false"); err != nil {
		t.Fatal(err)
	}
	if !t.Run("same", func(t *testing.T) { Golden(t, "x.txt", "a\nb\n") }) {
		t.Fatal("the written golden file does not match")
	}
	got, err := os.ReadFile(filepath.Join("testdata", "golden", "x.txt"))
	if err != nil || string(got) != "a\nb\n" {
		t.Fatalf("golden file %q, %v", got, err)
	}
}
