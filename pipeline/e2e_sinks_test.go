package pipeline_test

import (
	"context"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks/clickhousesink"
)

// withClickHouse points o at db on ch.
func withClickHouse(o e2eOpts, ch *testharness.ClickHouse, db string) e2eOpts {
	o.chAddr, o.chDB, o.chUser, o.chPassword = ch.Addr, db, ch.Username, ch.Password
	return o
}

// migrateAndStopMerges applies the schema to db and stops background
// merges of its three ReplacingMergeTree tables, so that count() without
// FINAL shows every row a sink inserted (duplicates included) and FINAL is
// what collapses them.
func migrateAndStopMerges(t *testing.T, conn driver.Conn, db string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := clickhousesink.Migrate(ctx, conn, db); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	for _, table := range []string{clickhousesink.TableVerdicts, clickhousesink.TableFuseCommands, clickhousesink.TableRollups} {
		if err := conn.Exec(ctx, "SYSTEM STOP MERGES "+db+"."+table); err != nil {
			t.Fatalf("stop merges of %s.%s: %v", db, table, err)
		}
	}
}

// startMergelessDB starts ClickHouse (StartClickHouse) and returns it, a
// database of its own with the schema applied and merges stopped
// (migrateAndStopMerges), and a connection to that database.
func startMergelessDB(t *testing.T) (*testharness.ClickHouse, string, driver.Conn) {
	t.Helper()
	ch := testharness.StartClickHouse(t)
	db := ch.NewDatabase(t)
	conn := ch.ConnDatabase(t, db)
	migrateAndStopMerges(t, conn, db)
	return ch, db, conn
}

// TestKafkaE2EBothSinksAgree sends 100k generated spans (36 keys, an error
// burst, a latency tail blow-up and a canary drift) through the whole
// pipeline with the Kafka and ClickHouse sinks on, and checks that the
// three views of the result agree exactly: the verdict rows of ClickHouse
// (FINAL), the verdict messages on fusebox.verdicts, and an in-memory replay
// of the keyed topic through engine.Worker — same ids, same status, value,
// n and method; the fuse commands of ClickHouse, of fusebox.fuse and of the
// replay (signatures included); the span rollups of ClickHouse and of the
// replay, whose span counts per key equal the generated spans of every
// closed minute.
func TestKafkaE2EBothSinksAgree(t *testing.T) {
	k := testharness.StartBroker(t)
	ch := testharness.StartClickHouse(t)
	db := ch.NewDatabase(t)
	conn := ch.ConnDatabase(t, db)

	sc := e2eScenario(50, 2000*time.Second) // 100,000 LLM calls over 33m20s of event time
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pub := publishScenario(ctx, t, k, sc, 0)
	if pub.Spans != 100_000 {
		t.Fatalf("published %d LLM spans, want 100000", pub.Spans)
	}

	// The router marks a source partition idle after idle_source_timeout of
	// wall time without records, even while it still has a backlog; the
	// other partitions' event time then makes its records late. 3 s keeps
	// that from happening on a loaded machine (this test asserts no late
	// span), at the cost of a slower drain.
	cfg := e2eConfig(t, withClickHouse(e2eOpts{brokers: k.Brokers, group: "e2e", idleSourceTimeout: 3 * time.Second}, ch, db))
	signer := testSigner(t)
	r := startRun(t, cfg, signer)
	r.waitDrained(t, k, cfg, pub.Spans, 2*time.Minute)
	r.stop(t)
	st := r.p.Keyed().Stats()
	t.Logf("pipeline: %d spans in %v (to drained and stopped); keyed stage %+v", pub.Spans, time.Since(r.start).Round(time.Millisecond), st)

	ref := referenceRun(t, cfg, readTopic(t, k, cfg.Topics.Keyed), r.checkpoints(), signer)
	refV := verdictIDs(t, ref.out.Verdicts, true, "in-memory replay")
	if ref.stats.Spans+ref.stats.LateSpans != pub.Spans || st.Spans != ref.stats.Spans || st.LateSpans != ref.stats.LateSpans ||
		st.Verdicts != ref.stats.Verdicts || st.Commands != ref.stats.Commands {
		t.Fatalf("pipeline stats %+v differ from the replay's %+v (published %d spans)", st, ref.stats, pub.Spans)
	}
	if st.LateSpans != 0 {
		t.Fatalf("%d late spans from in-order traffic", st.LateSpans)
	}

	// The scenario must exercise what the sinks carry: breaches of more
	// than one processor and breaker commands.
	breaches := map[string]int{}
	for _, v := range ref.out.Verdicts {
		if v.Status == schemas.StatusBreach {
			breaches[v.Processor]++
		}
	}
	trips := 0
	for _, c := range ref.out.Commands {
		if c.Action == schemas.ActionTrip && c.State == schemas.StateOpen {
			trips++
		}
		if c.Signature == "" {
			t.Fatalf("unsigned command %s", commandKey(&c))
		}
	}
	t.Logf("replay: %d verdicts (breaches by processor %v), %d commands (%d trips), %d rollups",
		len(ref.out.Verdicts), breaches, len(ref.out.Commands), trips, len(ref.out.Rollups))
	if breaches["burnrate"] == 0 || breaches["tail"] == 0 || trips == 0 {
		t.Fatalf("the incidents did not show: breaches %v, %d trips", breaches, trips)
	}

	// Verdicts: ClickHouse FINAL = Kafka = replay.
	if n, u := chCount(t, conn, "SELECT count() FROM "+db+".verdicts FINAL"), chCount(t, conn, "SELECT uniqExact(id) FROM "+db+".verdicts"); n != u {
		t.Fatalf("verdicts FINAL: %d rows for %d ids", n, u)
	}
	inCH := chVerdicts(t, conn, db)
	sameIDs(t, "ClickHouse", inCH, "replay", refV)
	onKafka := kafkaVerdicts(t, k, cfg.Topics.Verdicts)
	kv := verdictIDs(t, onKafka, false, "fusebox.verdicts")
	sameIDs(t, cfg.Topics.Verdicts, kv, "replay", refV)
	retries := metric(r.p.Kafka.Metrics(), "fusebox_sink_retries_total", "topic", cfg.Topics.Verdicts)
	if len(onKafka) != len(kv) && retries == 0 {
		t.Fatalf("%d verdict messages for %d ids without any delivery retry", len(onKafka), len(kv))
	}
	for id, want := range refV {
		got, onK := inCH[id], kv[id]
		if got.Status != string(want.Status) || got.Method != want.Method || got.N != want.N || !sameFloat(got.Value, want.Value) {
			t.Fatalf("verdict %s in ClickHouse %+v, replay %s %s n=%d value=%v", id, got, want.Status, want.Method, want.N, want.Value)
		}
		if onK.Status != want.Status || onK.Method != want.Method || onK.N != want.N || !sameFloat(onK.Value, want.Value) || onK.Key != want.Key {
			t.Fatalf("verdict %s on Kafka %+v, replay %+v", id, onK, want)
		}
	}

	// Fuse commands: ClickHouse FINAL = Kafka = replay.
	refC := map[string]bool{}
	for i := range ref.out.Commands {
		refC[commandKey(&ref.out.Commands[i])] = true
	}
	kc := map[string]bool{}
	cmds := kafkaCommands(t, k, cfg.Topics.Fuse)
	for i := range cmds {
		kc[commandKey(&cmds[i])] = true
	}
	sameIDs(t, "ClickHouse fuse_commands", chCommands(t, conn, db), "replay commands", refC)
	sameIDs(t, cfg.Topics.Fuse, kc, "replay commands", refC)

	// Rollups: ClickHouse FINAL = replay, and per key the spans of every
	// closed minute (before the last rollup boundary the watermark passed)
	// are all there.
	got := chRollups(t, conn, db)
	want := refRollups(t, ref.out.Rollups)
	sameIDs(t, "ClickHouse span_rollups", got, "replay rollups", want)
	for id, w := range want {
		if got[id] != w {
			t.Fatalf("rollup %s: ClickHouse %+v, replay %+v", id, got[id], w)
		}
	}
	checkRollupSpans(t, got, ref, spansPerKey(t, sc), pub.Spans)
}

// checkRollupSpans checks that per key the rollup span counts add up to the
// generated spans that end before the last minute boundary the key's keyed
// partition evaluated, that no late span is missing from the late_spans
// column, and logs how many spans are still in open minutes.
func checkRollupSpans(t *testing.T, got map[string]rollupRow, ref *reference, gen map[schemas.Key][]int64, published int64) {
	t.Helper()
	perKey := map[schemas.Key]uint64{}
	var total, late uint64
	for _, r := range got {
		perKey[r.Key] += r.Spans
		total += r.Spans
		late += r.Late
	}
	if late != uint64(ref.stats.LateSpans) {
		t.Fatalf("span_rollups count %d late spans, the keyed stage %d", late, ref.stats.LateSpans)
	}
	var open int64
	for key, ends := range gen {
		p, ok := ref.tenants[key.Tenant]
		if !ok {
			t.Fatalf("tenant %s never reached the keyed topic", key.Tenant)
		}
		cutoff := ref.watermark[p] - ref.watermark[p]%int64(time.Minute)
		var closed uint64
		for _, e := range ends {
			if e < cutoff {
				closed++
			} else {
				open++
			}
		}
		if perKey[key] != closed {
			t.Fatalf("key %s: span_rollups count %d spans, %d were generated before %v", key.String(), perKey[key], closed, time.Unix(0, cutoff).UTC())
		}
	}
	if int64(total)+open != published {
		t.Fatalf("rollups %d + open minutes %d != published %d", total, open, published)
	}
	t.Logf("span_rollups: %d rows, %d spans in closed minutes + %d in the minutes still open = %d published, %d late",
		len(got), total, open, published, late)
}

// TestKafkaE2ESameInputTwice runs the pipeline twice from scratch over the same
// topics — the second time with a fresh consumer group and a fresh state
// topic, as after losing the state — into the same ClickHouse database.
// Everything is written a second time (the Kafka topic holds every verdict
// twice, the sink inserted every row again), yet after FINAL each verdict
// id is one row and the rollup sums are not doubled.
func TestKafkaE2ESameInputTwice(t *testing.T) {
	k := testharness.StartBroker(t)
	ch, db, conn := startMergelessDB(t)

	sc := e2eScenario(30, 1200*time.Second) // 36,000 calls over 20 minutes
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pub := publishScenario(ctx, t, k, sc, 0)

	base := withClickHouse(e2eOpts{brokers: k.Brokers}, ch, db)
	o1 := base
	o1.group = "first"
	cfg1 := e2eConfig(t, o1)
	r1 := startRun(t, cfg1, nil)
	r1.waitDrained(t, k, cfg1, pub.Spans, time.Minute)
	r1.stop(t)
	first := chVerdicts(t, conn, db)
	firstRollups := chRollups(t, conn, db)
	rollups1 := chCount(t, conn, "SELECT sum(spans) FROM "+db+".span_rollups FINAL")
	rollupRows1 := chCount(t, conn, "SELECT count() FROM "+db+".span_rollups FINAL")
	commands1 := chCount(t, conn, "SELECT count() FROM "+db+".fuse_commands FINAL")
	onKafka1 := len(kafkaVerdicts(t, k, cfg1.Topics.Verdicts))
	if len(first) == 0 || rollups1 == 0 || commands1 == 0 {
		t.Fatalf("first run wrote %d verdicts, %d rollup spans, %d commands", len(first), rollups1, commands1)
	}

	o2 := base
	o2.group, o2.stateSuffix = "second", ".second"
	cfg2 := e2eConfig(t, o2)
	if cfg2.Version != cfg1.Version {
		t.Fatalf("config versions %q and %q: verdict ids would differ", cfg1.Version, cfg2.Version)
	}
	r2 := startRun(t, cfg2, nil)
	r2.waitDrained(t, k, cfg2, pub.Spans, time.Minute)
	r2.stop(t)
	chm := r2.p.ClickHouse.Metrics()
	reinserted := metric(chm, "fusebox_sink_records_total", "table", clickhousesink.TableVerdicts)
	rollupsReinserted := metric(chm, "fusebox_sink_records_total", "table", clickhousesink.TableRollupsInput)
	t.Logf("second run re-inserted %v verdicts and %v rollups (first run: %d verdicts, %d rollup rows)", reinserted, rollupsReinserted, len(first), rollupRows1)
	if int(reinserted) != len(first) || uint64(rollupsReinserted) != rollupRows1 {
		t.Fatalf("second run inserted %v verdicts and %v rollups, want %d and %d: the replay was not complete", reinserted, rollupsReinserted, len(first), rollupRows1)
	}

	raw := chCount(t, conn, "SELECT count() FROM "+db+".verdicts")
	final := chCount(t, conn, "SELECT count() FROM "+db+".verdicts FINAL")
	uniq := chCount(t, conn, "SELECT uniqExact(id) FROM "+db+".verdicts")
	t.Logf("verdicts: %d rows stored, %d after FINAL, %d ids", raw, final, uniq)
	if raw != 2*uint64(len(first)) {
		t.Fatalf("%d verdict rows stored, want %d (each twice, merges stopped)", raw, 2*len(first))
	}
	if final != uniq || final != uint64(len(first)) {
		t.Fatalf("after FINAL %d rows for %d ids; the first run wrote %d", final, uniq, len(first))
	}
	// FINAL keeps the last row inserted (no version column), here the
	// second run's: its values must equal the first run's.
	sameVerdicts(t, "ClickHouse FINAL after the second run", chVerdicts(t, conn, db), "ClickHouse FINAL after the first run", first)
	got := chRollups(t, conn, db)
	sameIDs(t, "span_rollups after the second run", got, "after the first run", firstRollups)
	for id, w := range firstRollups {
		if got[id] != w {
			t.Fatalf("rollup %s after the second run %+v, after the first run %+v", id, got[id], w)
		}
	}
	if n := chCount(t, conn, "SELECT sum(spans) FROM "+db+".span_rollups FINAL"); n != rollups1 {
		t.Fatalf("rollup spans after FINAL %d, after the first run %d", n, rollups1)
	}
	if n := chCount(t, conn, "SELECT count() FROM "+db+".span_rollups"); n != 2*rollupRows1 {
		t.Fatalf("%d rollup rows stored, want %d (each twice)", n, 2*rollupRows1)
	}
	if n := chCount(t, conn, "SELECT count() FROM "+db+".fuse_commands FINAL"); n != commands1 {
		t.Fatalf("fuse commands after FINAL %d, after the first run %d", n, commands1)
	}
	all := kafkaVerdicts(t, k, cfg2.Topics.Verdicts)
	if len(all) != 2*onKafka1 {
		t.Fatalf("fusebox.verdicts holds %d messages, want %d (every verdict twice)", len(all), 2*onKafka1)
	}
	sameIDs(t, "fusebox.verdicts", verdictIDs(t, all, false, ""), "ClickHouse", first)
	sameVerdictMessages(t, cfg2.Topics.Verdicts, all, "ClickHouse FINAL after the first run", first)
}
