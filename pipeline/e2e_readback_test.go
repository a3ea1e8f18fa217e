package pipeline_test

// Reading back what the pipeline wrote — the verdict and fuse topics, the
// ClickHouse tables after FINAL — and the reference to compare it with: the
// keyed topic replayed through engine.Worker in memory.

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/ingest"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks"
)

// readTopic reads every record of topic (as of its end offsets now).
func readTopic(t testing.TB, k *testharness.Kafka, topic string) []*kgo.Record {
	t.Helper()
	var want int64
	for _, o := range k.EndOffsets(t, topic) {
		want += o
	}
	recs := k.ReadAll(t, topic, int(want), time.Minute)
	if int64(len(recs)) != want {
		t.Fatalf("read %d records of %s, its end offsets say %d", len(recs), topic, want)
	}
	return recs
}

// kafkaVerdicts decodes the verdict topic.
func kafkaVerdicts(t testing.TB, k *testharness.Kafka, topic string) []schemas.Verdict {
	t.Helper()
	var out []schemas.Verdict
	for _, r := range readTopic(t, k, topic) {
		v, err := sinks.UnmarshalVerdictJSON(r.Value)
		if err != nil {
			t.Fatalf("%s offset %d: %v", topic, r.Offset, err)
		}
		if string(r.Key) != sinks.VerdictRecordKey(&v) {
			t.Fatalf("verdict %s keyed %q, want %q", v.ID, r.Key, sinks.VerdictRecordKey(&v))
		}
		out = append(out, v)
	}
	return out
}

// kafkaCommands decodes the fuse topic.
func kafkaCommands(t testing.TB, k *testharness.Kafka, topic string) []schemas.FuseCommand {
	t.Helper()
	var out []schemas.FuseCommand
	for _, r := range readTopic(t, k, topic) {
		c, err := schemas.DecodeFuseCommand(r.Value)
		if err != nil {
			t.Fatalf("%s offset %d: %v", topic, r.Offset, err)
		}
		if string(r.Key) != c.Target.String() {
			t.Fatalf("command for %s keyed %q", c.Target.String(), r.Key)
		}
		out = append(out, c)
	}
	return out
}

// reference is the in-memory run: every keyed partition's records replayed
// through a fresh engine.Worker, as an uninterrupted pipeline would apply
// them.
type reference struct {
	out   schemas.Output
	stats engine.WorkerStats
	// watermark is each partition's final watermark; tenants maps a
	// tenant to the keyed partition its spans went to.
	watermark map[int32]int64
	tenants   map[string]int32
}

// referenceRun replays recs (a keyed topic) partition by partition, each up
// to upTo[partition] (exclusive; every record when upTo is nil), signing
// commands with signer when set.
func referenceRun(t testing.TB, cfg *config.File, recs []*kgo.Record, upTo map[int32]int64, signer engine.Signer) *reference {
	t.Helper()
	wc, err := config.WorkerConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	byPart := map[int32][]*kgo.Record{}
	for _, r := range recs {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	ref := &reference{watermark: map[int32]int64{}, tenants: map[string]int32{}}
	parts := make([]int32, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	for _, p := range parts {
		rs := byPart[p]
		slices.SortFunc(rs, func(a, b *kgo.Record) int { return int(a.Offset - b.Offset) })
		w, err := engine.NewWorker(wc, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if upTo != nil && r.Offset >= upTo[p] {
				break
			}
			rec := &engine.KeyedRecord{}
			if err := engine.DecodeKeyedRecord(r.Offset, ingest.Headers(nil, r.Headers), r.Value, rec); err != nil {
				t.Fatalf("keyed %d/%d: %v", p, r.Offset, err)
			}
			for i := range rec.Spans {
				ref.tenants[rec.Spans[i].Key.Tenant] = p
			}
			w.Apply(rec)
			o := w.TakeOutput()
			if signer != nil {
				if err := signer.SignAll(o.Commands); err != nil {
					t.Fatal(err)
				}
			}
			ref.out.Verdicts = append(ref.out.Verdicts, o.Verdicts...)
			ref.out.Commands = append(ref.out.Commands, o.Commands...)
			ref.out.Rollups = append(ref.out.Rollups, o.Rollups...)
		}
		st := w.Stats()
		ref.watermark[p] = st.Watermark
		ref.stats.Add(st) // leaves the watermark alone
	}
	return ref
}

// verdictIDs is the set of ids, failing on a duplicate when unique is set.
func verdictIDs(t testing.TB, vs []schemas.Verdict, unique bool, what string) map[string]schemas.Verdict {
	t.Helper()
	out := make(map[string]schemas.Verdict, len(vs))
	for _, v := range vs {
		if _, dup := out[v.ID]; dup && unique {
			t.Fatalf("%s: verdict id %s twice", what, v.ID)
		}
		out[v.ID] = v
	}
	return out
}

// sameIDs fails unless a and b hold the same ids, showing a few of the
// differences.
func sameIDs[A, B any](t testing.TB, aName string, a map[string]A, bName string, b map[string]B) {
	t.Helper()
	var onlyA, onlyB []string
	for id := range a {
		if _, ok := b[id]; !ok {
			onlyA = append(onlyA, id)
		}
	}
	for id := range b {
		if _, ok := a[id]; !ok {
			onlyB = append(onlyB, id)
		}
	}
	if len(onlyA)+len(onlyB) > 0 {
		slices.Sort(onlyA)
		slices.Sort(onlyB)
		t.Fatalf("verdict ids differ: %d in %s (%d) only, e.g. %v; %d in %s (%d) only, e.g. %v",
			len(onlyA), aName, len(a), onlyA[:min(3, len(onlyA))], len(onlyB), bName, len(b), onlyB[:min(3, len(onlyB))])
	}
}

// chVerdict is what the tests read of a verdict row.
type chVerdict struct {
	Status, Method string
	Value          float64
	N              int64
}

func sameFloat(a, b float64) bool {
	return a == b || (math.IsNaN(a) && math.IsNaN(b))
}

// asCHVerdict is what a verdict row of v holds of chVerdict's fields.
func asCHVerdict(v *schemas.Verdict) chVerdict {
	return chVerdict{Status: string(v.Status), Method: v.Method, Value: v.Value, N: v.N}
}

// asCHVerdicts maps verdictIDs' result to chVerdicts.
func asCHVerdicts(vs map[string]schemas.Verdict) map[string]chVerdict {
	out := make(map[string]chVerdict, len(vs))
	for id, v := range vs {
		out[id] = asCHVerdict(&v)
	}
	return out
}

func sameCHVerdict(a, b chVerdict) bool {
	return a.Status == b.Status && a.Method == b.Method && a.N == b.N && sameFloat(a.Value, b.Value)
}

// sameVerdicts fails unless got and want hold the same verdict ids with the
// same status, method, n and value.
func sameVerdicts(t testing.TB, gotName string, got map[string]chVerdict, wantName string, want map[string]chVerdict) {
	t.Helper()
	sameIDs(t, gotName, got, wantName, want)
	for id, w := range want {
		if g := got[id]; !sameCHVerdict(g, w) {
			t.Fatalf("verdict %s in %s %+v, in %s %+v", id, gotName, g, wantName, w)
		}
	}
}

// sameVerdictMessages fails unless every message of msgs, duplicates
// included, is a verdict of want with the same status, method, n and value.
func sameVerdictMessages(t testing.TB, topic string, msgs []schemas.Verdict, wantName string, want map[string]chVerdict) {
	t.Helper()
	for i := range msgs {
		w, ok := want[msgs[i].ID]
		if g := asCHVerdict(&msgs[i]); !ok || !sameCHVerdict(g, w) {
			t.Fatalf("verdict %s message %d on %s %+v, in %s %+v (present %v)", msgs[i].ID, i, topic, g, wantName, w, ok)
		}
	}
}

// chVerdicts reads db.verdicts FINAL.
func chVerdicts(t testing.TB, conn driver.Conn, db string) map[string]chVerdict {
	t.Helper()
	out := map[string]chVerdict{}
	chRows(t, conn, "SELECT id, status, method, value, n FROM "+db+".verdicts FINAL", func(scan func(dest ...any)) {
		var id string
		var v chVerdict
		scan(&id, &v.Status, &v.Method, &v.Value, &v.N)
		if _, dup := out[id]; dup {
			t.Fatalf("verdict %s twice in %s.verdicts FINAL", id, db)
		}
		out[id] = v
	})
	return out
}

// chRows runs query (a minute at the most) and calls row for each row
// of the result, with scan reading its columns; an error of the query, a
// scan or the iteration fails the test.
func chRows(t testing.TB, conn driver.Conn, query string, row func(scan func(dest ...any))) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := conn.Query(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	scan := func(dest ...any) {
		t.Helper()
		if err := rows.Scan(dest...); err != nil {
			t.Fatal(err)
		}
	}
	for rows.Next() {
		row(scan)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// chCount runs a query returning one UInt64.
func chCount(t testing.TB, conn driver.Conn, query string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var n uint64
	if err := conn.QueryRow(ctx, query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// commandKey identifies a fuse command and what a gateway acts on.
func commandKey(c *schemas.FuseCommand) string {
	ids := make([]string, len(c.Reasons))
	for i, r := range c.Reasons {
		ids[i] = r.VerdictID
	}
	return fmt.Sprintf("%s#%d %s/%s L%d exp=%d sig=%s:%s reasons=%s", c.Target.String(), c.Version, c.Action, c.State, c.Level,
		c.ExpiresAtUnixNano, c.KeyID, c.Signature, strings.Join(ids, ","))
}

// chCommands reads db.fuse_commands FINAL as commandKeys.
func chCommands(t testing.TB, conn driver.Conn, db string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	chRows(t, conn, "SELECT target, version, action, state, level, expires_at_unix_nano, key_id, signature, reason_verdict_ids FROM "+db+".fuse_commands FINAL", func(scan func(dest ...any)) {
		var (
			target, action, state, keyID, sig string
			version                           uint64
			level                             int32
			expires                           int64
			ids                               []string
		)
		scan(&target, &version, &action, &state, &level, &expires, &keyID, &sig, &ids)
		out[fmt.Sprintf("%s#%d %s/%s L%d exp=%d sig=%s:%s reasons=%s", target, version, action, state, level, expires, keyID, sig, strings.Join(ids, ","))] = true
	})
	return out
}

// rollupRow is one (key, minute) of span_rollups.
type rollupRow struct {
	Key                      schemas.Key
	Minute                   int64
	Spans, Errors, In, Out   uint64
	Corrections, Late, Durns uint64
}

// chRollups reads db.span_rollups FINAL.
func chRollups(t testing.TB, conn driver.Conn, db string) map[string]rollupRow {
	t.Helper()
	out := map[string]rollupRow{}
	chRows(t, conn, `SELECT tenant, service, model, variant, minute_unix_nano, spans, errors, input_tokens, output_tokens,
		corrections, late_spans, duration_samples FROM `+db+`.span_rollups FINAL`, func(scan func(dest ...any)) {
		var r rollupRow
		scan(&r.Key.Tenant, &r.Key.Service, &r.Key.Model, &r.Key.Variant, &r.Minute, &r.Spans, &r.Errors, &r.In, &r.Out,
			&r.Corrections, &r.Late, &r.Durns)
		id := rollupID(r.Key, r.Minute)
		if _, dup := out[id]; dup {
			t.Fatalf("rollup %s twice in span_rollups FINAL", id)
		}
		out[id] = r
	})
	return out
}

func rollupID(k schemas.Key, minute int64) string {
	return k.String() + "@" + time.Unix(0, minute).UTC().Format("15:04")
}

// refRollups turns the reference's rollups into rows, failing on a (key,
// minute) emitted twice.
func refRollups(t testing.TB, rs []schemas.Rollup) map[string]rollupRow {
	t.Helper()
	out := map[string]rollupRow{}
	for _, r := range rs {
		id := rollupID(r.Key, r.MinuteUnixNano)
		if _, dup := out[id]; dup {
			t.Fatalf("reference emitted rollup %s twice", id)
		}
		out[id] = rollupRow{Key: r.Key, Minute: r.MinuteUnixNano, Spans: uint64(r.N), Errors: uint64(r.Errors), In: uint64(r.InputTokens),
			Out: uint64(r.OutputTokens), Corrections: uint64(r.Corrections), Late: uint64(r.LateSpans), Durns: uint64(len(r.DurationsMs))}
	}
	return out
}

// testSigner is a real HMAC signer, so that signatures can be compared
// across the sinks and the reference.
func testSigner(t testing.TB) *fuse.Signer {
	t.Helper()
	key, err := fuse.NewKey("e2e", []byte("0123456789abcdef0123456789abcdef"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	ring, err := fuse.NewKeyring("e2e", key)
	if err != nil {
		t.Fatal(err)
	}
	s, err := fuse.NewSigner(ring)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// metric returns the value of the sink metric name whose labels include
// label=value ("" for any).
func metric(ms []sinks.Metric, name, label, value string) float64 {
	for _, m := range ms {
		if m.Name != name {
			continue
		}
		if label == "" {
			return m.Value
		}
		for _, l := range m.Labels {
			if l.Name == label && l.Value == value {
				return m.Value
			}
		}
	}
	return math.NaN()
}
