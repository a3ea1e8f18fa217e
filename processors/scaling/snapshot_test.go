package scaling

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// The version-2 fixtures were written by the build before the latency
// moments (the latency sample, window.Store): generate(3, ...) with the
// quiet script below, spans ending before v2Cut, driven to v2Boundary,
// with max_samples_per_slot 2000 (scaling_v2.snap: no slot full, every
// span in the sample) and 100 (scaling_v2_cap100.snap: every whole slot
// sampled).
const (
	v2Cut      = t0 + 7*minute + 30*1e9
	v2Boundary = t0 + 7*minute
)

func v2Spans() (before, after []schemas.Span) {
	for _, s := range generate(3, t0, t0+40*minute, script{quietFrom: t0 + 15*minute, quietTo: t0 + 40*minute}) {
		if s.EndUnixNano < v2Cut {
			before = append(before, s)
		} else {
			after = append(after, s)
		}
	}
	return before, after
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRestoresVersion2Snapshot: a version-2 snapshot whose sample held
// every span restores to the state a current processor reaches on the
// same spans, byte for byte, and both go on to the same verdicts.
func TestRestoresVersion2Snapshot(t *testing.T) {
	b := readFixture(t, "scaling_v2.snap")
	if !bytes.Contains(b[:32], []byte("fusebox.scaling")) || b[4+len("fusebox.scaling")] != 2 {
		t.Fatalf("fixture header %q: not a version 2 scaling snapshot", b[:24])
	}
	before, after := v2Spans()
	live := mustNew(t, testConfig())
	proctest.Drive(t, live, before, t0, v2Boundary)
	want, _ := live.MarshalBinary()

	q := mustNew(t, testConfig())
	if err := q.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if got, _ := q.MarshalBinary(); !bytes.Equal(got, want) {
		t.Fatalf("restored v2 state marshals to %d bytes unlike the live state's %d", len(got), len(want))
	}
	end := t0 + 40*minute
	a := proctest.Drive(t, live, after, v2Boundary, end)
	c := proctest.Drive(t, q, after, v2Boundary, end)
	if len(a) == 0 || !reflect.DeepEqual(a, c) {
		t.Fatalf("after a v2 restore: %d verdicts, live %d, or they differ", len(c), len(a))
	}
	proctest.RejectsDamage(t, func() processors.Processor { return mustNew(t, testConfig()) }, b, ErrCorrupt)
}

// TestRestoresSampledVersion2Snapshot: a version-2 snapshot of full
// samples (100 per slot) restores with each slot's moments over its
// sample, so the first windows after it have latency_samples below n.
func TestRestoresSampledVersion2Snapshot(t *testing.T) {
	b := readFixture(t, "scaling_v2_cap100.snap")
	q := mustNew(t, testConfig())
	if err := q.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if q.Keys() != 2 {
		t.Fatalf("%d keys restored, want 2", q.Keys())
	}
	for k, ks := range q.keys {
		for _, sl := range ks.slots {
			if want := min(sl.n, 100); sl.lat.n != want {
				t.Errorf("%v slot +%dm: %d latencies for %d spans, want %d", k, (sl.start-t0)/minute, sl.lat.n, sl.n, want)
			}
		}
	}
	_, after := v2Spans()
	vs := proctest.Drive(t, q, after, v2Boundary, v2Boundary+minute)
	if len(vs) != 2 {
		t.Fatalf("%d verdicts after the restore, want 2", len(vs))
	}
	for i := range vs {
		n, _ := vs[i].Detail("n")
		ls, _ := vs[i].Detail("latency_samples")
		if !(ls >= 2 && ls < n) {
			t.Errorf("%s: latency_samples %v, n %v: want the restored sample below n", vs[i].Key, ls, n)
		}
	}
}

// TestSnapshotChecksMoments: a v3 snapshot whose moments count more spans
// than their slot, or sums for no span, is refused.
func TestSnapshotChecksMoments(t *testing.T) {
	before, _ := v2Spans()
	p := mustNew(t, testConfig())
	proctest.Drive(t, p, before, t0, v2Boundary)
	for name, damage := range map[string]func(m *moments, n int64){
		"more latencies than spans": func(m *moments, n int64) { m.n = n + 1 },
		"sums of no span":           func(m *moments, _ int64) { m.n = 0 },
		"Σx² beyond 2^157":          func(m *moments, _ int64) { m.q[2] = 1 << 30 },
	} {
		q := mustNew(t, testConfig())
		good, _ := p.MarshalBinary()
		if err := q.UnmarshalBinary(good); err != nil {
			t.Fatal(err)
		}
		for _, ks := range q.keys {
			damage(&ks.slots[0].lat, ks.slots[0].n)
			break
		}
		bad, _ := q.MarshalBinary()
		if err := mustNew(t, testConfig()).UnmarshalBinary(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: got %v, want an error wrapping ErrCorrupt", name, err)
		}
	}
}
