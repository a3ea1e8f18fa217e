package engine_test

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/engine/router"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/burnrate"
	"github.com/fusebox-dev/fusebox/processors/corrections"
	"github.com/fusebox-dev/fusebox/processors/rollup"
	"github.com/fusebox-dev/fusebox/schemas"
)

// sourceRecord is one message of a source partition.
type sourceRecord struct {
	offset      int64
	spans       []schemas.Span
	corrections []schemas.Correction
}

// sources splits generated traffic into nSrc span partitions (by trace id,
// as the Collector's partition_traces_by_id does) plus one correction
// partition, in messages of up to 40 spans.
func sources(t *testing.T, sc traffic.Scenario, d time.Duration, nSrc int) [][]sourceRecord {
	t.Helper()
	g, err := traffic.New(sc, time.Unix(1_700_000_000, 0))
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]sourceRecord, nSrc+1)
	pending := make([][]schemas.Span, nSrc)
	flush := func(p int) {
		if len(pending[p]) > 0 {
			out[p] = append(out[p], sourceRecord{offset: int64(len(out[p])), spans: pending[p]})
			pending[p] = nil
		}
	}
	for g.Offset() < d {
		b := g.Next(250 * time.Millisecond)
		for _, s := range b.Spans {
			p := int(s.TraceID[0]) % nSrc
			pending[p] = append(pending[p], s)
			if len(pending[p]) == 40 {
				flush(p)
			}
		}
		for p := range pending {
			flush(p)
		}
		for _, c := range b.Corrections {
			out[nSrc] = append(out[nSrc], sourceRecord{offset: int64(len(out[nSrc])), corrections: []schemas.Correction{c}})
		}
	}
	return out
}

const keyedPartitions = 4

// keyed runs the router's splitters over the source records, taking the
// next record from a source chosen by pick, and returns each keyed
// partition's records in the order the router would write them.
func keyed(srcs [][]sourceRecord, pick func(remaining []int) int) [][]engine.KeyedRecord {
	names := make([]string, len(srcs))
	splitters := make([]*router.Splitter, len(srcs))
	for i := range srcs {
		topic, part := "otlp_spans", int32(i)
		if i == len(srcs)-1 {
			topic, part = "fusebox.corrections", 0
		}
		names[i] = topic
		splitters[i] = router.NewSplitter(topic, part, keyedPartitions, router.SplitterConfig{ByTenant: true})
	}
	announce := "fusebox.corrections:1,otlp_spans:" + strconv.Itoa(len(srcs)-1)
	out := make([][]engine.KeyedRecord, keyedPartitions)
	next := make([]int, len(srcs))
	for {
		var remaining []int
		for i := range srcs {
			if next[i] < len(srcs[i]) {
				remaining = append(remaining, i)
			}
		}
		if len(remaining) == 0 {
			break
		}
		i := pick(remaining)
		rec := srcs[i][next[i]]
		next[i]++
		for _, o := range splitters[i].Split(rec.offset, rec.spans, rec.corrections) {
			out[o.Partition] = append(out[o.Partition], engine.KeyedRecord{
				Offset: int64(len(out[o.Partition])), Source: o.Source, SourceMaxEventTime: o.SourceMax,
				SourceTopics: announce, Idle: o.Idle,
				Spans: slices.Clone(o.Spans), Corrections: slices.Clone(o.Corrections),
			})
		}
	}
	return out
}

func workerConfig(t *testing.T) engine.WorkerConfig {
	t.Helper()
	br := burnrate.DefaultConfig()
	br.MinEvents = 10
	return engine.WorkerConfig{
		ConfigVersion:   "test",
		KeyDims:         engine.AllKeyDims(),
		Guard:           engine.GuardConfig{MaxTenants: 100, MaxServices: 100, MaxModels: 100, MaxVariants: 10, IdleTTLNanos: int64(24 * time.Hour)},
		AllowedLateness: 5 * time.Second,
		SLOs: []engine.SLOSpec{
			{Meta: processors.Meta{SLO: "availability", ConfigVersion: "test"},
				New: func() (processors.Processor, error) {
					return burnrate.New(processors.Meta{SLO: "availability", ConfigVersion: "test"}, br)
				}},
			{Meta: processors.Meta{SLO: "_rollup", ConfigVersion: "test"},
				New: func() (processors.Processor, error) { return rollup.New(rollup.Config{MaxSamplesPerMinute: 200}) }},
		},
	}
}

// run feeds a keyed partition's records through a worker, optionally
// restoring from a snapshot before record restartAt, and replaying the
// records since the snapshot (as after a crash), and returns all output.
func run(t *testing.T, cfg engine.WorkerConfig, p int32, recs []engine.KeyedRecord, snapAt, restartAt int) schemas.Output {
	t.Helper()
	w, err := engine.NewWorker(cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	var all schemas.Output
	take := func() {
		o := w.TakeOutput()
		all.Verdicts = append(all.Verdicts, o.Verdicts...)
		all.Commands = append(all.Commands, o.Commands...)
		all.Rollups = append(all.Rollups, o.Rollups...)
	}
	var snap []byte
	var snapOut int
	for i := 0; i < len(recs); i++ {
		if i == snapAt {
			take()
			if snap, err = w.MarshalBinary(); err != nil {
				t.Fatal(err)
			}
			snapOut = len(all.Verdicts)
		}
		if i == restartAt && snap != nil {
			// Crash: the output since the snapshot was maybe written,
			// maybe not; the restored worker produces it again.
			take()
			all.Verdicts = all.Verdicts[:snapOut]
			w2, rep, err := engine.RestoreWorker(cfg, p, snap)
			if err != nil || !rep.Full() {
				t.Fatalf("restore: %+v err=%v", rep, err)
			}
			w = w2
			i = int(w.NextOffset())
			restartAt = -1
			all.Rollups = dedupRollups(all.Rollups)
		}
		w.Apply(&recs[i])
	}
	take()
	all.Rollups = dedupRollups(all.Rollups)
	return all
}

// dedupRollups keeps the last row per (key, minute), as ClickHouse's
// ReplacingMergeTree does.
func dedupRollups(rs []schemas.Rollup) []schemas.Rollup {
	type k struct {
		key schemas.Key
		m   int64
	}
	idx := map[k]int{}
	var out []schemas.Rollup
	for _, r := range rs {
		if i, ok := idx[k{r.Key, r.MinuteUnixNano}]; ok {
			out[i] = r
			continue
		}
		idx[k{r.Key, r.MinuteUnixNano}] = len(out)
		out = append(out, r)
	}
	return out
}

func scenario() traffic.Scenario {
	sc := traffic.Demo()
	sc.Rate = 150
	sc.Incidents = []traffic.Incident{{Name: "errors", Kind: traffic.ErrorBurst, Start: 10 * time.Minute, End: 14 * time.Minute,
		Target: traffic.Target{Tenant: "acme"}, Magnitude: 0.5}}
	return sc
}

func TestInterleavingDoesNotChangeVerdicts(t *testing.T) {
	srcs := sources(t, scenario(), 20*time.Minute, 3)
	cfg := workerConfig(t)
	inOrder := keyed(srcs, func(rem []int) int { return rem[0] })
	r := rand.New(rand.NewPCG(1, 2))
	shuffled := keyed(srcs, func(rem []int) int { return rem[r.IntN(len(rem))] })
	// A router that runs one source far ahead of the others, as when it
	// catches up a backlog.
	lagging := keyed(srcs, func(rem []int) int { return rem[len(rem)-1] })
	breaches := 0
	for p := int32(0); p < keyedPartitions; p++ {
		want := run(t, cfg, p, inOrder[p], -1, -1)
		for name, recs := range map[string][]engine.KeyedRecord{"shuffled": shuffled[p], "lagging": lagging[p]} {
			got := run(t, cfg, p, recs, -1, -1)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("partition %d: %s interleaving gave %d verdicts / %d rollups, in-order %d / %d",
					p, name, len(got.Verdicts), len(got.Rollups), len(want.Verdicts), len(want.Rollups))
			}
		}
		for _, v := range want.Verdicts {
			if err := v.Validate(); err != nil {
				t.Fatal(err)
			}
			if v.Status == schemas.StatusBreach {
				breaches++
				if v.Key.Tenant != "acme" {
					t.Fatalf("breach outside the incident: %+v", v)
				}
			}
		}
	}
	if breaches == 0 {
		t.Fatal("the error burst on acme produced no breach")
	}
}

func TestRestartFromSnapshotEqualsUninterrupted(t *testing.T) {
	srcs := sources(t, scenario(), 20*time.Minute, 3)
	cfg := workerConfig(t)
	ks := keyed(srcs, func(rem []int) int { return rem[0] })
	for p := int32(0); p < keyedPartitions; p++ {
		want := run(t, cfg, p, ks[p], -1, -1)
		n := len(ks[p])
		for _, cut := range [][2]int{{n / 5, n / 3}, {n / 2, n/2 + 1}, {n - 10, n - 1}} {
			got := run(t, cfg, p, ks[p], cut[0], cut[1])
			if !reflect.DeepEqual(got.Verdicts, want.Verdicts) || !reflect.DeepEqual(got.Rollups, want.Rollups) {
				t.Fatalf("partition %d: snapshot at %d, crash at %d: %d verdicts, uninterrupted %d",
					p, cut[0], cut[1], len(got.Verdicts), len(want.Verdicts))
			}
		}
	}
}

func TestRouterReplayIsDeduplicated(t *testing.T) {
	srcs := sources(t, scenario(), 6*time.Minute, 2)
	cfg := workerConfig(t)
	ks := keyed(srcs, func(rem []int) int { return rem[0] })
	for p := int32(0); p < keyedPartitions; p++ {
		want := run(t, cfg, p, ks[p], -1, -1)
		// A router that crashed before committing writes a run of records
		// again.
		recs := slices.Clone(ks[p])
		dup := slices.Clone(recs[len(recs)/3 : len(recs)/2])
		recs = slices.Insert(recs, len(recs)/2, dup...)
		for i := range recs {
			recs[i].Offset = int64(i)
		}
		got := run(t, cfg, p, recs, -1, -1)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("partition %d: replayed records changed the output", p)
		}
	}
}

func TestLateRecordsAreCountedNotFolded(t *testing.T) {
	cfg := workerConfig(t)
	w, _ := engine.NewWorker(cfg, 0)
	base := int64(1_700_000_000e9)
	mk := func(off int64, src int64, end int64) *engine.KeyedRecord {
		return &engine.KeyedRecord{Offset: off, Source: engine.SourceRef{Topic: "s", Partition: 0, Offset: src},
			SourceTopics: "s:1", SourceMaxEventTime: end,
			Spans: []schemas.Span{{Key: schemas.Key{Tenant: "a", Model: "m"}, StartUnixNano: end - 1e6, EndUnixNano: end, DurationMs: 1}}}
	}
	w.Apply(mk(0, 0, base))
	w.Apply(mk(1, 1, base+int64(time.Minute)))
	w.Apply(mk(2, 2, base+int64(time.Minute)-int64(4*time.Second))) // within 5s lateness
	w.Apply(mk(3, 3, base+int64(time.Minute)-int64(6*time.Second))) // late
	st := w.Stats()
	if st.Spans != 3 || st.LateSpans != 1 {
		t.Fatalf("spans %d late %d, want 3 and 1", st.Spans, st.LateSpans)
	}
}

func TestSourcesNotYetHeardHoldTheWatermark(t *testing.T) {
	cfg := workerConfig(t)
	w, _ := engine.NewWorker(cfg, 0)
	base := int64(1_700_000_000e9)
	rec := func(off int64, part int32, end int64, idle bool) *engine.KeyedRecord {
		return &engine.KeyedRecord{Offset: off, Source: engine.SourceRef{Topic: "s", Partition: part, Offset: off},
			SourceTopics: "s:2", SourceMaxEventTime: end, Idle: idle}
	}
	w.Apply(rec(0, 0, base+int64(time.Hour), false))
	if wm := w.Stats().Watermark; wm != -1<<63 {
		t.Fatalf("watermark %d before source 1 was heard of, want -inf", wm)
	}
	w.Apply(rec(1, 1, base, true)) // source 1 idle
	if wm := w.Stats().Watermark; wm != base+int64(time.Hour)-int64(5*time.Second) {
		t.Fatalf("watermark %d with source 1 idle, want source 0's max minus lateness", wm)
	}
}

func TestSnapshotRejectsDamageAndKeepsPositionAcrossConfigChange(t *testing.T) {
	srcs := sources(t, scenario(), 4*time.Minute, 2)
	cfg := workerConfig(t)
	ks := keyed(srcs, func(rem []int) int { return rem[0] })
	w, _ := engine.NewWorker(cfg, 0)
	for i := range ks[0] {
		w.Apply(&ks[0][i])
	}
	w.TakeOutput()
	snap, err := w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{0, 1, len(snap) / 3, len(snap) - 1} {
		if _, _, err := engine.RestoreWorker(cfg, 0, snap[:cut]); !errors.Is(err, engine.ErrCorruptSnapshot) {
			t.Fatalf("snapshot cut at %d of %d: err %v, want ErrCorruptSnapshot", cut, len(snap), err)
		}
	}
	if _, _, err := engine.RestoreWorker(cfg, 1, snap); err == nil {
		t.Fatal("snapshot of partition 0 restored into partition 1")
	}
	// Another config version with the same SLO state ids keeps everything;
	// another state id resets that SLO only, keeping the position.
	changed := cfg
	changed.ConfigVersion = "other"
	changed.SLOs = slices.Clone(cfg.SLOs)
	changed.SLOs[0].StateID = "other-window"
	r, rep, err := engine.RestoreWorker(changed, 0, snap)
	if err != nil || rep.Full() || rep.Names(engine.Reset) != "availability" || rep.Names(engine.Kept) != "_rollup" {
		t.Fatalf("state id change of one SLO: %+v err=%v, want it reset and the other kept", rep, err)
	}
	if r.NextOffset() != w.NextOffset() {
		t.Fatalf("position %d after a config change, want %d", r.NextOffset(), w.NextOffset())
	}
}

func TestRollupsCountTheCorrectionsTheCorrectionsSLOAttributes(t *testing.T) {
	srcs := sources(t, scenario(), 12*time.Minute, 2)
	cfg := workerConfig(t)
	cc := corrections.DefaultConfig()
	meta := processors.Meta{SLO: "corrections", ConfigVersion: "test"}
	cfg.SLOs = append([]engine.SLOSpec{{Meta: meta, New: func() (processors.Processor, error) { return corrections.New(meta, cc) }}}, cfg.SLOs...)
	ks := keyed(srcs, func(rem []int) int { return rem[0] })
	var published, counted int64
	for _, recs := range srcs {
		for _, r := range recs {
			published += int64(len(r.corrections))
		}
	}
	for p := int32(0); p < keyedPartitions; p++ {
		out := run(t, cfg, p, ks[p], -1, -1)
		for _, r := range out.Rollups {
			counted += r.Corrections
		}
	}
	// Corrections of the last minutes are not yet attributed (the
	// watermark has not passed them) and repeats of a corrected response
	// count once: most, not all, of the published ones.
	if counted == 0 || counted > published || float64(counted) < 0.7*float64(published) {
		t.Fatalf("rollups count %d corrections of %d published", counted, published)
	}
}

// TestRollupsCountCorrectionsWhereverTheyAreInTheList: the worker relays
// the corrections attributed at a boundary to the rollups of that boundary
// (processors.Hooks) whether the corrections SLO comes before or after the
// rollup SLO in the list: the rollups are the same either way.
func TestRollupsCountCorrectionsWhereverTheyAreInTheList(t *testing.T) {
	srcs := sources(t, scenario(), 12*time.Minute, 2)
	cc := corrections.DefaultConfig()
	meta := processors.Meta{SLO: "corrections", ConfigVersion: "test"}
	spec := engine.SLOSpec{Meta: meta, New: func() (processors.Processor, error) { return corrections.New(meta, cc) }}
	first, last := workerConfig(t), workerConfig(t)
	first.SLOs = append([]engine.SLOSpec{spec}, first.SLOs...)
	last.SLOs = append(slices.Clone(last.SLOs), spec)
	ks := keyed(srcs, func(rem []int) int { return rem[0] })
	var counted int64
	for p := int32(0); p < keyedPartitions; p++ {
		a, b := run(t, first, p, ks[p], -1, -1), run(t, last, p, ks[p], -1, -1)
		if !reflect.DeepEqual(a.Rollups, b.Rollups) {
			t.Fatalf("partition %d: rollups differ with the corrections SLO last (%d rows) and first (%d rows)", p, len(b.Rollups), len(a.Rollups))
		}
		for _, r := range a.Rollups {
			counted += r.Corrections
		}
	}
	if counted == 0 {
		t.Fatal("no correction counted: the test shows nothing")
	}
}
