package engine_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/ingest"
	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/breaker"
	"github.com/fusebox-dev/fusebox/processors/tail"
	"github.com/fusebox-dev/fusebox/schemas"
)

// memStore keeps checkpoints in memory.
type memStore struct{}

func (memStore) Load(context.Context, int32) ([]byte, bool, error) { return nil, false, nil }
func (memStore) Save(context.Context, int32, []byte) error         { return nil }

// captureSink keeps every output.
type captureSink struct {
	mu  sync.Mutex
	out schemas.Output
}

func (s *captureSink) Write(_ context.Context, o schemas.Output) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.Verdicts = append(s.out.Verdicts, o.Verdicts...)
	s.out.Commands = append(s.out.Commands, o.Commands...)
	return nil
}
func (*captureSink) Flush(context.Context) error { return nil }
func (*captureSink) Close(context.Context) error { return nil }

// TestStarvedHalfOpenIsLoud: a target tripped by a tail SLO whose
// half-open probes stay below min_samples (5 probes/s × a 10 s window = 50
// < 100) is never closed and never re-tripped; the keyed stage logs a WARN
// naming the target, the SLO and the probe count against min_samples, and
// counts it in StarvedTargets, within one evaluation interval of the first
// full probe window judged insufficient_data (not before: a probe window
// that still grows from the half-open's start is no evidence). When the
// probes suffice again it says so (INFO), the count drops to 0, and the
// target closes.
func TestStarvedHalfOpenIsLoud(t *testing.T) {
	const (
		window = 10 * time.Second
		every  = time.Second
		step   = 100 * time.Millisecond // event time per keyed record
	)
	meta := processors.Meta{SLO: "latency", ConfigVersion: "test"}
	tc := tail.DefaultConfig()
	tc.Budget, tc.Window, tc.Every, tc.MinSamples, tc.MinExceedances = 1000, window, every, 100, 10
	pol := breaker.DefaultPolicy()
	pol.Rules = []breaker.Rule{{Processor: "tail", Action: schemas.ActionTrip, K: 1, N: 1}}
	pol.CoolDown, pol.MaxCoolDown, pol.CloseAfter, pol.HalfOpenFraction = 5*time.Second, 20*time.Second, 2, 0.2
	var logs bytes.Buffer
	sink := &captureSink{}
	k, err := engine.NewKeyed(engine.KeyedConfig{
		Store: memStore{}, Sinks: []engine.Sink{sink}, CheckpointEvery: time.Hour,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Worker: engine.WorkerConfig{
			ConfigVersion: "test", KeyDims: engine.AllKeyDims(),
			Guard: engine.GuardConfig{MaxTenants: 10, MaxServices: 10, MaxModels: 10, MaxVariants: 10, IdleTTLNanos: int64(time.Hour)},
			SLOs: []engine.SLOSpec{{Meta: meta, StateID: "latency",
				New: func() (processors.Processor, error) { return tail.New(meta, tc) }}},
			NewBreaker: func() (engine.Breaker, error) { return breaker.New(pol) },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h := k.Handler("keyed", 0)
	if _, err := h.(ingest.Starter).Start(ctx, -1); err != nil {
		t.Fatal(err)
	}
	key := schemas.Key{Tenant: "acme", Service: "chat", Model: "big", Variant: "v1"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	var offset int64
	// feed sends d of event time at rate spans/s of latency ms, one keyed
	// record per step, and calls after with the watermark after each.
	now := t0
	feed := func(d time.Duration, rate int, ms float64, after func(wm int64)) {
		for end := now + int64(d); now < end; now += int64(step) {
			rec := &engine.KeyedRecord{Offset: offset, Source: engine.SourceRef{Topic: "otlp_spans", Offset: offset}, SourceTopics: "otlp_spans:1"}
			// Spans at exact multiples of 1/rate s inside [now, now+step).
			gap := int64(time.Second) / int64(rate)
			for e := (now + gap - 1) / gap * gap; e < now+int64(step); e += gap {
				s := schemas.Span{Key: key, StartUnixNano: e - int64(ms*1e6), EndUnixNano: e, DurationMs: ms}
				s.SpanID[0], s.SpanID[1], s.SpanID[2], s.SpanID[3] = byte(offset), byte(offset>>8), byte(e/gap), byte(e/gap>>8)
				copy(s.TraceID[:], s.SpanID[:])
				rec.Spans = append(rec.Spans, s)
			}
			rec.SourceMaxEventTime = now + int64(step) - 1
			offset++
			if err := h.Handle(ctx, &ingest.Batch{Records: []ingest.Record{{Payload: rec}}}); err != nil {
				t.Fatal(err)
			}
			if after != nil {
				after(k.Partitions()[0])
			}
		}
	}
	const warnMsg = "half-open target starved"
	halfOpenAt := func() int64 {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		for _, c := range sink.out.Commands {
			if c.State == schemas.StateHalfOpen {
				return c.IssuedAtUnixNano
			}
		}
		return 0
	}
	// The incident: 50 calls/s of 5 s, then the gateway's probes only.
	feed(4*time.Second, 50, 5000, nil)
	var warnedAt int64
	feed(30*time.Second, 5, 100, func(wm int64) {
		if warnedAt == 0 && strings.Contains(logs.String(), warnMsg) {
			warnedAt = wm
		}
	})
	ho := halfOpenAt()
	if ho == 0 {
		t.Fatalf("no half-open command; commands %+v", sink.out.Commands)
	}
	if warnedAt == 0 {
		for _, v := range sink.out.Verdicts {
			t.Logf("%v..%v %s n=%d", time.Unix(0, v.WindowStartUnixNano).UTC().Format("15:04:05.000"), time.Unix(0, v.WindowEndUnixNano).UTC().Format("15:04:05.000"), v.Status, v.N)
		}
		for _, c := range sink.out.Commands {
			t.Logf("cmd %v %s %s", time.Unix(0, c.IssuedAtUnixNano).UTC().Format("15:04:05.000"), c.Action, c.State)
		}
		t.Fatalf("no %q WARN 30 s after the trip; log:\n%s", warnMsg, logs.String())
	}
	// The first full probe window ends at ho+window; its verdict starts
	// at ho (not sure yet: the same as a growing window), the next one's
	// after: that is where it must be said, not before, and not later.
	sure := ho + int64(window) + int64(every)
	if warnedAt < sure || warnedAt > sure+int64(step) {
		t.Errorf("WARN at watermark %v, want within one record after the first full probe window past the half-open (%v)",
			time.Unix(0, warnedAt).UTC(), time.Unix(0, sure).UTC())
	}
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, warnMsg) {
			line = l
			break
		}
	}
	for _, want := range []string{"level=WARN", "target=acme/chat/big/v1", "slo=latency", "processor=tail", "metric=p999_duration_ms", "probes=50", "min_samples=100"} {
		if !strings.Contains(line, want) {
			t.Errorf("WARN line lacks %q: %s", want, line)
		}
	}
	if n := strings.Count(logs.String(), warnMsg); n != 1 {
		t.Errorf("%d starved WARN lines, want one for the streak", n)
	}
	if got := k.StarvedTargets(); len(got) != 1 || got["latency"] != 1 {
		t.Errorf("StarvedTargets %v, want latency: 1", got)
	}
	sink.mu.Lock()
	for _, c := range sink.out.Commands {
		if c.IssuedAtUnixNano > ho && c.State != schemas.StateHalfOpen {
			t.Errorf("a starved half-open target got a %s/%s command at %v", c.Action, c.State, time.Unix(0, c.IssuedAtUnixNano).UTC())
		}
	}
	sink.mu.Unlock()

	// The probes suffice again: said, counted 0, and the target closes.
	feed(15*time.Second, 30, 100, nil)
	if !strings.Contains(logs.String(), "half-open target no longer starved") {
		t.Errorf("no INFO when the probes sufficed again; log:\n%s", logs.String())
	}
	if got := k.StarvedTargets(); len(got) != 1 || got["latency"] != 0 {
		t.Errorf("StarvedTargets %v after the probes sufficed, want latency: 0", got)
	}
	closed := false
	sink.mu.Lock()
	for _, c := range sink.out.Commands {
		closed = closed || c.State == schemas.StateClosed
	}
	sink.mu.Unlock()
	if !closed {
		t.Error("the target did not close once its probes sufficed")
	}
}
