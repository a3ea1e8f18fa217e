package engine_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/breaker"
	"github.com/fusebox-dev/fusebox/processors/effect"
)

// badBlob wraps a part of the worker so that its snapshot is damaged.
type (
	badBreaker struct{ engine.Breaker }
	badEffects struct{ engine.Effects }
	badProc    struct{ processors.Processor }
)

const damaged = `{"format":"fusebox.effect.state.v1","judgements":[{"target":`

func (badBreaker) MarshalBinary() ([]byte, error) { return []byte(damaged), nil }
func (badEffects) MarshalBinary() ([]byte, error) { return []byte(damaged), nil }
func (badProc) MarshalBinary() ([]byte, error)    { return []byte(damaged), nil }

// TestCheckpointPartThatDoesNotDecodeIsRefused: the project's policy for a
// checkpoint it cannot read (docs/state-and-upgrades.md, "Upgrades": a damaged checkpoint or an
// unsupported format version) is to refuse it — the partition does not
// start, rather than drop state silently — and a part of the checkpoint
// (an SLO's, the breaker's or the effect judge's state) that does not
// decode is refused alike: ErrCorruptSnapshot, naming the partition and the
// part, and saying how to start empty. The whole checkpoint, undamaged,
// restores.
func TestCheckpointPartThatDoesNotDecodeIsRefused(t *testing.T) {
	srcs := sources(t, scenario(), 4*time.Minute, 2)
	recs := keyed(srcs, func(rem []int) int { return rem[0] })[0]
	cfg := workerConfig(t)
	cfg.NewBreaker = func() (engine.Breaker, error) { return breaker.New(breaker.DefaultPolicy()) }
	cfg.NewEffects = func() (engine.Effects, error) {
		return effect.New(effect.DefaultConfig(), "test", map[string]time.Duration{"availability": time.Minute})
	}
	snapshot := func(c engine.WorkerConfig) []byte {
		w, err := engine.NewWorker(c, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs {
			w.Apply(&recs[i])
		}
		w.TakeOutput()
		b, err := w.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if _, rep, err := engine.RestoreWorker(cfg, 0, snapshot(cfg)); err != nil || !rep.Full() {
		t.Fatalf("undamaged checkpoint: %+v, %v", rep, err)
	}
	for _, tc := range []struct {
		part string
		bad  func(engine.WorkerConfig) engine.WorkerConfig
	}{
		{"the effect judge's state", func(c engine.WorkerConfig) engine.WorkerConfig {
			c.NewEffects = func() (engine.Effects, error) { e, err := cfg.NewEffects(); return badEffects{e}, err }
			return c
		}},
		{"the breaker's state", func(c engine.WorkerConfig) engine.WorkerConfig {
			c.NewBreaker = func() (engine.Breaker, error) { b, err := cfg.NewBreaker(); return badBreaker{b}, err }
			return c
		}},
		{`SLO "availability"'s state`, func(c engine.WorkerConfig) engine.WorkerConfig {
			c.SLOs = append([]engine.SLOSpec(nil), c.SLOs...)
			orig := c.SLOs[0].New
			c.SLOs[0].New = func() (processors.Processor, error) { p, err := orig(); return badProc{p}, err }
			return c
		}},
	} {
		_, _, err := engine.RestoreWorker(cfg, 0, snapshot(tc.bad(cfg)))
		if !errors.Is(err, engine.ErrCorruptSnapshot) {
			t.Errorf("%s damaged: err %v, want ErrCorruptSnapshot", tc.part, err)
			continue
		}
		for _, want := range []string{"partition 0's checkpoint", tc.part, "topics.state"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s damaged: %v, want it to say %q", tc.part, err, want)
			}
		}
	}
}
