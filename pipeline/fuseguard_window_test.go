package pipeline_test

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/internal/testharness"
)

// fuseFollower reads a fuse topic from its start for as long as the test
// runs, as a gateway does, and keeps every record.
type fuseFollower struct {
	mu   sync.Mutex
	recs []*kgo.Record
}

func followFuse(t *testing.T, k *testharness.Kafka, topic string) *fuseFollower {
	t.Helper()
	cl := k.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
	f := &fuseFollower{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			f.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { f.recs = append(f.recs, r) })
			f.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

// byKey returns the records of key, in offset order.
func (f *fuseFollower) byKey(key []byte) []*kgo.Record {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*kgo.Record
	for _, r := range f.recs {
		if bytes.Equal(r.Key, key) {
			out = append(out, r)
		}
	}
	return out
}

// TestKafkaFuseGuardRepairWindow measures, with fusebox running, how long
// the fuse topic's latest record of a target is not fusebox's current
// command after someone who can write the topic appends a tombstone, a
// replay of an older command of that target, or garbage. That is the time
// a gateway that (re)starts just then — after compaction kept only the
// foreign record — acts on the wrong state: the record timestamps
// (CreateTime, stamped by the producers on this machine: the test's and
// fusebox's) of the foreign record and of the next record of the target
// that is a valid command not older than the current one. Every foreign record must be
// repaired; the figures (median, max) are logged and stated in
// docs/security.md, never asserted.
func TestKafkaFuseGuardRepairWindow(t *testing.T) {
	k := testharness.StartBroker(t)
	cfg := loadConfig(t, k.Brokers, "")
	sc := traffic.Demo()
	sc.Rate = 60
	sc.Incidents = []traffic.Incident{{Name: "errors", Kind: traffic.ErrorBurst, Start: 4 * time.Minute, End: 12 * time.Minute,
		Target: traffic.Target{Tenant: "acme", Service: "chat"}, Magnitude: 0.5}}
	// In the past: Apache Kafka refuses timestamps more than an hour ahead.
	publish(t, k, sc, time.Now().Add(-20*time.Minute).Truncate(time.Minute), 15*time.Minute)

	p, stop := startPipelineWith(t, cfg, nil, nil)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	fuseTopic := cfg.Topics.Fuse
	f := followFuse(t, k, fuseTopic)
	// A target with two commands: its first is an older command to replay.
	var key []byte
	var older *kgo.Record
	testharness.Eventually(t, 90*time.Second, "a target with two fuse commands", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		n := map[string]int{}
		for _, r := range f.recs {
			if n[string(r.Key)]++; n[string(r.Key)] == 2 {
				key = r.Key
				return true
			}
		}
		return false
	})
	older = f.byKey(key)[0]
	testharness.Eventually(t, 20*time.Second, "the guard to be ready", func() bool { return p.Guard.Ready() && p.Guard.Stats().Targets > 0 })
	// The backlog judged: no new fuse record for 3 s, so a repair is the
	// guard's, not a command the breaker happens to issue just then.
	count, quietSince := 0, time.Now()
	testharness.Eventually(t, 90*time.Second, "the fuse topic to be quiet for 3s", func() bool {
		f.mu.Lock()
		n := len(f.recs)
		f.mu.Unlock()
		if n != count {
			count, quietSince = n, time.Now()
		}
		return time.Since(quietSince) >= 3*time.Second
	})

	// current is the latest command of the target as the guard should see
	// it: the latest valid one in the ordering among what is on the topic.
	current := func() *fuseschema.FuseCommand {
		var best *fuseschema.FuseCommand
		for _, r := range f.byKey(key) {
			if c, err := fuseschema.DecodeFuseCommand(r.Value); err == nil && (best == nil || fuseschema.CompareFuseOrder(&c, best) > 0) {
				best = &c
			}
		}
		return best
	}

	kinds := []struct {
		name  string
		value []byte
	}{{"tombstone", nil}, {"older command", older.Value}, {"garbage", []byte(`{"not":"a command"`)}}
	const perKind = 10
	windows := map[string][]time.Duration{}
	var all []time.Duration
	w := k.Client(t)
	for i := 0; i < perKind*len(kinds); i++ {
		kind := kinds[i%len(kinds)]
		cur := current()
		if cur == nil {
			t.Fatal("no valid command of the target on the fuse topic")
		}
		pctx, pcancel := context.WithTimeout(context.Background(), 30*time.Second)
		res := w.ProduceSync(pctx, &kgo.Record{Topic: fuseTopic, Key: key, Value: kind.value, Timestamp: time.Now()})
		pcancel()
		foreign, err := res.First()
		if err != nil {
			t.Fatalf("produce %s: %v", kind.name, err)
		}
		var repair *kgo.Record
		testharness.Eventually(t, 20*time.Second, "the repair of a "+kind.name, func() bool {
			for _, r := range f.byKey(key) {
				if r.Offset <= foreign.Offset {
					continue
				}
				if c, err := fuseschema.DecodeFuseCommand(r.Value); err == nil && fuseschema.CompareFuseOrder(&c, cur) >= 0 {
					repair = r
					return true
				}
			}
			return false
		})
		d := repair.Timestamp.Sub(foreign.Timestamp)
		windows[kind.name] = append(windows[kind.name], d)
		all = append(all, d)
		time.Sleep(50 * time.Millisecond) // apart, as separate incidents
	}
	summary := func(ds []time.Duration) (median, maxD time.Duration) {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2], s[len(s)-1]
	}
	for _, kind := range kinds {
		m, x := summary(windows[kind.name])
		t.Logf("%s (%s): repaired %d of %d; window median %v, max %v", kind.name, k.Kind, len(windows[kind.name]), perKind, m, x)
	}
	m, x := summary(all)
	t.Logf("all (%s, n=%d): window median %v, max %v; guard %+v", k.Kind, len(all), m, x, p.Guard.Stats())
	if st := p.Guard.Stats(); st.Foreign < uint64(len(all)) || st.Republished < uint64(len(all)) {
		t.Errorf("guard saw %d foreign records and re-published %d times, want at least %d each", st.Foreign, st.Republished, len(all))
	}
}
