package pipeline_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/fusebox-dev/fusebox/internal/sim/gen"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/sinks/clickhousesink"
)

// outageSampler records, every few tens of milliseconds, the ClickHouse
// sink's buffered rows and the Go heap.
type outageSampler struct {
	mu         sync.Mutex
	maxPending float64
	overCap    float64 // the largest sample above the cap, 0 if none
	maxHeap    uint64
	heapSince  bool // maxHeap counts from markHeap on
}

func (s *outageSampler) run(ctx context.Context, r *e2eRun, capRows int) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var ms runtime.MemStats
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		p := metric(r.p.ClickHouse.Metrics(), "fusebox_sink_pending_records", "", "")
		s.mu.Lock()
		s.maxPending = max(s.maxPending, p)
		if p > float64(capRows) {
			s.overCap = max(s.overCap, p)
		}
		s.mu.Unlock()
		if i%10 == 0 { // ReadMemStats stops the world: every 200ms
			runtime.ReadMemStats(&ms)
			s.mu.Lock()
			if s.heapSince {
				s.maxHeap = max(s.maxHeap, ms.HeapAlloc)
			}
			s.mu.Unlock()
		}
	}
}

// markHeap starts tracking the heap's peak.
func (s *outageSampler) markHeap() {
	s.mu.Lock()
	s.heapSince, s.maxHeap = true, 0
	s.mu.Unlock()
}

func (s *outageSampler) get() (maxPending, overCap float64, maxHeap uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxPending, s.overCap, s.maxHeap
}

func heapAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// The checkpoint interval is 5 s, so that a partition meets the full
// buffer in Write before its next checkpoint blocks in the sink's Flush:
// both stop the keyed stage, and the test wants to see the cap hold.
//
// TestKafkaE2EClickHouseOutage stops clickhouse-server (SIGKILL) for 20 s while
// traffic keeps arriving, and restarts it on the same port and data. While
// it is down: the ClickHouse sink's buffer fills to its cap and never past
// it, the keyed stage stops applying records (back-pressure, not buffering),
// the keyed consumer group's committed offsets do not move although
// uncommitted input is waiting, and the heap does not grow with the input.
// After the restart the pipeline resumes by itself, and every verdict of
// an uninterrupted replay of the keyed topic is in ClickHouse exactly once.
func TestKafkaE2EClickHouseOutage(t *testing.T) {
	const (
		outage     = 20 * time.Second
		grace      = 3 * time.Second // lets a checkpoint that completed at the kill commit
		bufferRows = 200
		// heapBound bounds the heap's growth during the outage. The input
		// published meanwhile (about 20 MB counting the broker's copy, which
		// lives in this process) accounts for most of it; an unbounded
		// buffer of the backlog would be several times more.
		heapBound = 256 << 20
	)
	k := testharness.StartBroker(t)
	srv := testharness.StartPrivateClickHouse(t)
	const db = "fusebox_outage"

	sc := e2eScenario(30, 50*time.Minute) // 90,000 calls
	cfg := e2eConfig(t, e2eOpts{brokers: k.Brokers, group: "outage", chAddr: srv.Addr, chDB: db, chUser: srv.Username,
		chBatch: 50, chBuffer: bufferRows, checkpointEvery: 5 * time.Second})
	r := startRun(t, cfg, nil)
	engineGroup := cfg.Kafka.Group + ".engine"
	adm := kadm.NewClient(k.Client(t))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sampler outageSampler
	go sampler.run(ctx, r, bufferRows)
	// 50 minutes of event time at 100x: the publisher runs for about 30 s,
	// before, during and after the outage.
	pubDone := make(chan gen.Summary, 1)
	go func() { pubDone <- publishScenario(ctx, t, k, sc, 100) }()

	chMetric := func(name, table string) float64 {
		return metric(r.p.ClickHouse.Metrics(), name, "table", table)
	}
	// Kill the server once verdicts reach it and every keyed partition has
	// committed a checkpoint: commits are then what one expects to see.
	if !testharness.Poll(time.Minute, func() bool {
		return chMetric("fusebox_sink_records_total", clickhousesink.TableVerdicts) >= 200 &&
			len(committed(t, adm, engineGroup, cfg.Topics.Keyed)) >= int(cfg.Topics.KeyedPartitions)
	}) {
		t.Fatalf("no verdicts in ClickHouse or no commit of every keyed partition within a minute; keyed stage %+v, committed %v",
			r.p.Keyed().Stats(), committed(t, adm, engineGroup, cfg.Topics.Keyed))
	}
	before := chMetric("fusebox_sink_records_total", clickhousesink.TableVerdicts)
	srv.Kill()
	downAt := time.Now()
	heapAtKill := heapAlloc()
	sampler.markHeap()
	t.Logf("clickhouse-server killed %v into the run, after %v verdict rows; heap %d MiB", downAt.Sub(r.start).Round(time.Millisecond), before, heapAtKill>>20)

	time.Sleep(grace)
	base := committed(t, adm, engineGroup, cfg.Topics.Keyed)
	var recordsMid int64 = -1
	for time.Since(downAt) < outage {
		if now := committed(t, adm, engineGroup, cfg.Topics.Keyed); !equalOffsets(now, base) {
			t.Fatalf("%v into the outage the committed offsets of %s moved from %v to %v", time.Since(downAt).Round(time.Millisecond), engineGroup, base, now)
		}
		if recordsMid < 0 && time.Since(downAt) >= outage/2 {
			recordsMid = r.p.Keyed().Stats().Records
		}
		time.Sleep(500 * time.Millisecond)
	}
	recordsEnd := r.p.Keyed().Stats().Records
	kin := r.p.KeyedConsumer().Stats()
	ends := k.EndOffsets(t, cfg.Topics.Keyed)
	maxPending, overCap, maxHeap := sampler.get()
	blocked := metric(r.p.ClickHouse.Metrics(), "fusebox_sink_blocked_seconds_total", "", "")
	t.Logf("outage: committed %v, keyed topic ends %v; keyed records applied %d at half-time, %d at the end; keyed consumer lag %d, %d of %d partitions paused; sink buffer peak %v of %d rows, Write blocked %.1fs; heap peak %d MiB (+%d MiB)",
		base, ends, recordsMid, recordsEnd, kin.Lag, kin.PausedPartitions, kin.Partitions, maxPending, bufferRows, blocked, maxHeap>>20, (int64(maxHeap)-int64(heapAtKill))>>20)
	srv.Start()
	upAt := time.Now()

	if overCap > 0 {
		t.Fatalf("the ClickHouse sink held %v rows, above its cap %d", overCap, bufferRows)
	}
	if maxPending != bufferRows || !(blocked > 0) {
		t.Fatalf("the sink buffer peaked at %v of %d rows and Write blocked %vs: the outage never applied back-pressure", maxPending, bufferRows, blocked)
	}
	if recordsEnd != recordsMid {
		t.Fatalf("the keyed stage applied %d records in the second half of the outage: it should be blocked on the full sink", recordsEnd-recordsMid)
	}
	waiting := false
	for p, end := range ends {
		waiting = waiting || end > base[p]
	}
	if !waiting {
		t.Fatalf("no keyed input was waiting to be committed (committed %v, ends %v): the test proved nothing", base, ends)
	}
	if int64(maxHeap)-int64(heapAtKill) > heapBound {
		t.Fatalf("heap grew from %d MiB to %d MiB during the outage", heapAtKill>>20, maxHeap>>20)
	}

	// Nothing is done to the pipeline: it must notice the server by itself.
	pub := <-pubDone
	t.Logf("published %d spans, %d MB of span and correction records", pub.Spans, pub.Bytes>>20)
	r.waitDrained(t, k, cfg, pub.Spans, 2*time.Minute)
	resumed := time.Since(upAt)
	r.stop(t)
	chm := r.p.ClickHouse.Metrics()
	t.Logf("drained %v after the restart; sink insert errors %v, reconnects %v",
		resumed.Round(time.Millisecond), metric(chm, "fusebox_sink_errors_total", "table", clickhousesink.TableVerdicts),
		metric(chm, "fusebox_sink_reconnects_total", "", ""))
	if !(metric(chm, "fusebox_sink_reconnects_total", "", "") > 0) {
		t.Fatalf("the sink never reconnected: metrics %+v", chm)
	}
	after := committed(t, adm, engineGroup, cfg.Topics.Keyed)
	ckpt := r.checkpoints()
	if !equalOffsets(after, ckpt) {
		t.Fatalf("after the stop the committed offsets are %v, the last checkpoints cover %v", after, ckpt)
	}

	ref := referenceRun(t, cfg, readTopic(t, k, cfg.Topics.Keyed), ckpt, nil)
	refV := verdictIDs(t, ref.out.Verdicts, true, "in-memory replay")
	conn := srv.ConnDatabase(t, db)
	if n, u := chCount(t, conn, "SELECT count() FROM "+db+".verdicts FINAL"), chCount(t, conn, "SELECT uniqExact(id) FROM "+db+".verdicts"); n != u {
		t.Fatalf("verdicts FINAL: %d rows for %d ids", n, u)
	}
	sameVerdicts(t, "ClickHouse after the outage", chVerdicts(t, conn, db), "replay", asCHVerdicts(refV))
	want := refRollups(t, ref.out.Rollups)
	got := chRollups(t, conn, db)
	sameIDs(t, "ClickHouse span_rollups", got, "replay rollups", want)
	for id, w := range want {
		if got[id] != w {
			t.Fatalf("rollup %s: ClickHouse %+v, replay %+v", id, got[id], w)
		}
	}
	t.Logf("%d verdicts and %d rollups, none lost", len(refV), len(want))
}

func equalOffsets(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for p, o := range a {
		if bo, ok := b[p]; !ok || bo != o {
			return false
		}
	}
	return true
}
