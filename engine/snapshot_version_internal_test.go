package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/rollup"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"github.com/fusebox-dev/fusebox/processors/tail"
	"github.com/fusebox-dev/fusebox/schemas"
)

// marshalV2 writes w as a fusebox of wave 2 wrote its checkpoints (format
// version 2: one config version, no state ids): the upgrade test's input.
func marshalV2(t *testing.T, w *Worker) []byte {
	t.Helper()
	procs := make([][]byte, len(w.slos))
	for i := range w.slos {
		b, err := w.slos[i].proc.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		procs[i] = b
	}
	return snapshotFormatV2.Marshal(func(e *snapcodec.Encoder) {
		e.String(w.cfg.ConfigVersion)
		e.U32(uint32(w.partition))
		e.I64(w.nextOffset)
		e.I64(w.watermark)
		e.I64(w.earliest)
		e.String(w.lastTopics)
		w.wm.appendBinary(e)
		w.guard.appendDims(e) // version 2 had no live keys
		for _, v := range w.counters() {
			e.I64(*v)
		}
		e.Count(len(w.slos))
		for i := range w.slos {
			e.String(w.slos[i].spec.Meta.SLO)
			e.I64(w.slos[i].next)
			e.String(string(procs[i]))
		}
		e.String("") // no breaker
	})
}

// marshalV5 writes w as format version 5 did (no last data timestamps).
func marshalV5(t *testing.T, w *Worker) []byte {
	t.Helper()
	b, err := w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	// Version 6 is version 5 followed by the last data timestamps: a
	// count and one I64 per source.
	d := snapcodec.NewDecoder(b)
	d.Header(snapshotName, snapshotFormat.Version)
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
	body := b[len(b)-d.Remaining():]
	v5 := snapcodec.NewEncoder(nil)
	v5.Header(snapshotName, 5)
	out := append(v5.Bytes(), body...)
	return out[:len(out)-4-8*len(w.wm.sources)]
}

// marshalV4 writes w as format version 4 did (no idle durations).
func marshalV4(t *testing.T, w *Worker) []byte {
	t.Helper()
	b := marshalV5(t, w)
	// Version 5 is version 4 followed by the idle durations: a count and
	// one I64 per source.
	d := snapcodec.NewDecoder(b)
	d.Header(snapshotName, 5)
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
	body := b[len(b)-d.Remaining():]
	v4 := snapcodec.NewEncoder(nil)
	v4.Header(snapshotName, 4)
	out := append(v4.Bytes(), body...)
	return out[:len(out)-4-8*len(w.wm.sources)]
}

// marshalV3 writes w as format version 3 did (no effect judge state).
func marshalV3(t *testing.T, w *Worker) []byte {
	t.Helper()
	if w.effects != nil {
		t.Fatal("marshalV3: the worker has an effect judge")
	}
	b := marshalV4(t, w)
	// Version 4 is version 3 followed by the judge's state (here "").
	d := snapcodec.NewDecoder(b)
	d.Header(snapshotName, 4)
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
	body := b[len(b)-d.Remaining():]
	v3 := snapcodec.NewEncoder(nil)
	v3.Header(snapshotName, 3)
	out := append(v3.Bytes(), body...)
	return out[:len(out)-4] // the judge's empty string: its U32 length
}

func versionTestConfig(version string) WorkerConfig {
	tc := tail.DefaultConfig()
	tc.Budget, tc.MinSamples = 1000, 10
	meta := processors.Meta{SLO: "latency", ConfigVersion: version}
	return WorkerConfig{
		ConfigVersion: version, KeyDims: AllKeyDims(),
		Guard: GuardConfig{MaxTenants: 10, MaxServices: 10, MaxModels: 10, MaxVariants: 10, IdleTTLNanos: int64(time.Hour)},
		SLOs: []SLOSpec{
			{Meta: meta, StateID: "tail-1", New: func() (processors.Processor, error) { return tail.New(meta, tc) }},
			{Meta: processors.Meta{SLO: "_rollup", ConfigVersion: version}, StateID: "rollup-1",
				New: func() (processors.Processor, error) { return rollup.New(rollup.Config{MaxSamplesPerMinute: 100}) }},
		},
	}
}

// versionTestRecords is 5 minutes of one key's spans, 10 a second.
func versionTestRecords() []KeyedRecord {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	var recs []KeyedRecord
	for i := 0; i < 300; i++ {
		end := t0 + int64(i)*int64(time.Second)
		var spans []schemas.Span
		for j := 0; j < 10; j++ {
			spans = append(spans, schemas.Span{TraceID: schemas.TraceID{byte(i), byte(i >> 8), byte(j)}, SpanID: schemas.SpanID{byte(i), byte(i >> 8), byte(j)},
				StartUnixNano: end - int64(time.Second), EndUnixNano: end, DurationMs: float64(100 + (i*7+j*13)%400),
				Key: schemas.Key{Tenant: "acme", Service: "chat", Model: "m", Variant: "stable"}})
		}
		recs = append(recs, KeyedRecord{Offset: int64(i), Source: SourceRef{Topic: "s", Partition: 0, Offset: int64(i)},
			SourceMaxEventTime: end, SourceTopics: "s:1", Spans: spans})
	}
	return recs
}

// TestSnapshotFormatVersions: a checkpoint of format version 2 (wave 2)
// is read — its SLO state kept under the same config version, reset under
// another, as that version did — and continues exactly as the worker that
// wrote it; so are those of version 3 (before the effect judge) and 4
// (before the idle durations) and 5 (before the last data timestamps);
// versions 1 and 7 are refused with ErrSnapshotVersion and a
// message that names the version and what to do.
func TestSnapshotFormatVersions(t *testing.T) {
	recs := versionTestRecords()
	cfg := versionTestConfig("v-old")
	w, err := NewWorker(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs[:200] {
		w.Apply(&recs[i])
	}
	w.TakeOutput()
	v2 := marshalV2(t, w)
	if v, ok := snapshotVersion(v2); !ok || v != 2 {
		t.Fatalf("test snapshot has version %d (%v), want 2", v, ok)
	}
	for i := range recs[200:] {
		w.Apply(&recs[200+i])
	}
	want := w.TakeOutput()

	r, rep, err := RestoreWorker(cfg, 0, v2)
	if err != nil {
		t.Fatalf("version 2 under the same config version: %v", err)
	}
	if rep.FormatVersion != 2 || !rep.Full() {
		t.Fatalf("version 2 under the same config version: %+v, want everything kept", rep)
	}
	for i := int(r.NextOffset()); i < len(recs); i++ {
		r.Apply(&recs[i])
	}
	got := r.TakeOutput()
	if g, w := fmt.Sprint(got.Verdicts, got.Rollups), fmt.Sprint(want.Verdicts, want.Rollups); g != w || len(want.Verdicts) == 0 {
		t.Fatalf("after restoring the version-2 checkpoint: %d verdicts, %d rollups; want the writer's %d, %d, identical",
			len(got.Verdicts), len(got.Rollups), len(want.Verdicts), len(want.Rollups))
	}
	// Under another config version: what version 2 kept (position only).
	_, rep, err = RestoreWorker(versionTestConfig("v-new"), 0, v2)
	if err != nil || rep.Names(Reset) != "latency,_rollup" {
		t.Fatalf("version 2 under another config version: %+v %v, want both SLOs reset", rep, err)
	}

	// Version 3 (before the effect judge): everything kept, the judge
	// starts empty.
	w3, err := NewWorker(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs[:200] {
		w3.Apply(&recs[i])
	}
	w3.TakeOutput()
	r3, rep, err := RestoreWorker(cfg, 0, marshalV3(t, w3))
	if err != nil || rep.FormatVersion != 3 || !rep.Full() {
		t.Fatalf("version 3: %+v %v, want everything kept", rep, err)
	}
	for i := int(r3.NextOffset()); i < len(recs); i++ {
		r3.Apply(&recs[i])
	}
	if got := r3.TakeOutput(); fmt.Sprint(got.Verdicts, got.Rollups) != fmt.Sprint(want.Verdicts, want.Rollups) {
		t.Fatalf("after restoring the version-3 checkpoint: %d verdicts, want the writer's %d, identical", len(got.Verdicts), len(want.Verdicts))
	}

	// Version 4 (before the idle durations): everything kept.
	r4, rep, err := RestoreWorker(cfg, 0, marshalV4(t, w3))
	if err != nil || rep.FormatVersion != 4 || !rep.Full() {
		t.Fatalf("version 4: %+v %v, want everything kept", rep, err)
	}
	for i := int(r4.NextOffset()); i < len(recs); i++ {
		r4.Apply(&recs[i])
	}
	if got := r4.TakeOutput(); fmt.Sprint(got.Verdicts, got.Rollups) != fmt.Sprint(want.Verdicts, want.Rollups) {
		t.Fatalf("after restoring the version-4 checkpoint: %d verdicts, want the writer's %d, identical", len(got.Verdicts), len(want.Verdicts))
	}

	// Version 5 (before the last data timestamps): everything kept.
	r5, rep, err := RestoreWorker(cfg, 0, marshalV5(t, w3))
	if err != nil || rep.FormatVersion != 5 || !rep.Full() {
		t.Fatalf("version 5: %+v %v, want everything kept", rep, err)
	}
	for i := int(r5.NextOffset()); i < len(recs); i++ {
		r5.Apply(&recs[i])
	}
	if got := r5.TakeOutput(); fmt.Sprint(got.Verdicts, got.Rollups) != fmt.Sprint(want.Verdicts, want.Rollups) {
		t.Fatalf("after restoring the version-5 checkpoint: %d verdicts, want the writer's %d, identical", len(got.Verdicts), len(want.Verdicts))
	}

	v6, err := w.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := snapshotVersion(v6); v != 6 {
		t.Fatalf("MarshalBinary writes version %d, want 6", v)
	}
	for _, ver := range []uint8{1, 7} {
		b := append([]byte(nil), v6...)
		b[4+len(snapshotName)] = ver // the version byte after the name
		_, _, err := RestoreWorker(cfg, 0, b)
		if !errors.Is(err, ErrSnapshotVersion) || !strings.Contains(err.Error(), fmt.Sprintf("format version %d", ver)) || !strings.Contains(err.Error(), "topics.state") {
			t.Fatalf("version %d: %v, want ErrSnapshotVersion naming the version and topics.state", ver, err)
		}
	}
}

// TestCheckpointVersionPrevious: with WorkerConfig.CheckpointVersion 4
// (compat.write_formats: previous) a worker writes checkpoints of format
// version 4, which the builds before the idle durations read (their
// RestoreWorker refuses versions 5 and 6), and which this build restores
// to a worker that continues exactly; without it, version 6.
func TestCheckpointVersionPrevious(t *testing.T) {
	recs := versionTestRecords()
	for _, tc := range []struct {
		set, want uint8
	}{{0, 6}, {6, 6}, {4, 4}} {
		cfg := versionTestConfig("v")
		cfg.CheckpointVersion = tc.set
		w, err := NewWorker(cfg, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs[:200] {
			w.Apply(&recs[i])
		}
		w.TakeOutput()
		snap, err := w.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := snapshotVersion(snap); v != tc.want {
			t.Fatalf("CheckpointVersion %d: writes version %d, want %d", tc.set, v, tc.want)
		}
		if tc.want == 4 {
			// marshalV4 cuts a current checkpoint down to what the
			// version-4 build wrote.
			w.cfg.CheckpointVersion = 0
			old := marshalV4(t, w)
			w.cfg.CheckpointVersion = 4
			if string(snap) != string(old) {
				t.Fatalf("CheckpointVersion 4: not what the version-4 build writes")
			}
		}
		for i := range recs[200:] {
			w.Apply(&recs[200+i])
		}
		want := w.TakeOutput()
		r, rep, err := RestoreWorker(cfg, 0, snap)
		if err != nil || int(rep.FormatVersion) != int(tc.want) || !rep.Full() {
			t.Fatalf("CheckpointVersion %d: restore %+v %v", tc.set, rep, err)
		}
		for i := int(r.NextOffset()); i < len(recs); i++ {
			r.Apply(&recs[i])
		}
		if got := r.TakeOutput(); fmt.Sprint(got.Verdicts, got.Rollups) != fmt.Sprint(want.Verdicts, want.Rollups) || len(want.Verdicts) == 0 {
			t.Fatalf("CheckpointVersion %d: %d verdicts after restore, want the writer's %d, identical", tc.set, len(got.Verdicts), len(want.Verdicts))
		}
	}
	cfg := versionTestConfig("v")
	cfg.CheckpointVersion = 3
	if _, err := NewWorker(cfg, 0); err == nil || !strings.Contains(err.Error(), "checkpoint version 3") {
		t.Fatalf("CheckpointVersion 3: %v, want an error naming it", err)
	}
}
