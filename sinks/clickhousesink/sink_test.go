package clickhousesink

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks"
)

func TestVerdictsWrittenTwiceCollapseToOneRow(t *testing.T) {
	ch := testharness.StartClickHouse(t)
	db := migratedDB(t, ch)
	s := newSink(t, sinkConfig(ch, db))
	var vs []schemas.Verdict
	for i := 0; i < 500; i++ {
		vs = append(vs, makeVerdict("tail", i))
	}
	// Two separate inserts of the same verdicts, as a replay after a crash
	// between the sink write and the offset commit would do.
	write(t, s, schemas.Output{Verdicts: vs})
	flush(t, s)
	write(t, s, schemas.Output{Verdicts: slices.Clone(vs)})
	flush(t, s)

	conn := ch.ConnDatabase(t, db)
	ctx := context.Background()
	var raw, final, ids uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM verdicts").Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT count(), uniqExact(id) FROM verdicts FINAL").Scan(&final, &ids); err != nil {
		t.Fatal(err)
	}
	// raw counts both inserts unless a merge already ran; FINAL must not.
	if raw != 500 && raw != 1000 {
		t.Errorf("raw rows %d, want 1000 (or 500 after a merge)", raw)
	}
	if final != 500 || ids != 500 {
		t.Errorf("after FINAL: %d rows, %d ids; want 500 and 500", final, ids)
	}

	// One row read back field by field.
	want := vs[7]
	var (
		got                    schemas.Verdict
		status                 string
		names                  []string
		values                 []float64
		windowStart, windowEnd time.Time
	)
	err := conn.QueryRow(ctx, `SELECT id, processor, slo, metric, tenant, service, model, variant,
		window_start, window_end, window_start_unix_nano, window_end_unix_nano,
		value, threshold, lower, upper, interval_level, status, method, n, detail_names, detail_values, config_version
		FROM verdicts FINAL WHERE id = ?`, want.ID).Scan(&got.ID, &got.Processor, &got.SLO, &got.Metric,
		&got.Key.Tenant, &got.Key.Service, &got.Key.Model, &got.Key.Variant, &windowStart, &windowEnd,
		&got.WindowStartUnixNano, &got.WindowEndUnixNano, &got.Value, &got.Threshold, &got.Lower, &got.Upper,
		&got.IntervalLevel, &status, &got.Method, &got.N, &names, &values, &got.ConfigVersion)
	if err != nil {
		t.Fatal(err)
	}
	got.Status = schemas.Status(status)
	for i := range names {
		got.Details = append(got.Details, schemas.Detail{Name: names[i], Value: values[i]})
	}
	if !verdictsEqual(got, want) {
		t.Errorf("read back\n %+v\nwant\n %+v", got, want)
	}
	if !windowEnd.Equal(time.Unix(0, want.WindowEndUnixNano).Truncate(time.Second)) ||
		!windowStart.Equal(time.Unix(0, want.WindowStartUnixNano).Truncate(time.Second)) {
		t.Errorf("window %v..%v, want the unix-nano fields truncated to seconds", windowStart, windowEnd)
	}
}

func verdictsEqual(a, b schemas.Verdict) bool {
	return a.ID == b.ID && a.Processor == b.Processor && a.SLO == b.SLO && a.Metric == b.Metric && a.Key == b.Key &&
		a.WindowStartUnixNano == b.WindowStartUnixNano && a.WindowEndUnixNano == b.WindowEndUnixNano &&
		a.Value == b.Value && a.Threshold == b.Threshold && a.Lower == b.Lower && a.Upper == b.Upper &&
		a.IntervalLevel == b.IntervalLevel && a.Status == b.Status && a.Method == b.Method && a.N == b.N &&
		slices.Equal(a.Details, b.Details) && a.ConfigVersion == b.ConfigVersion
}

// exactQuantile is the linear-interpolation quantile (type 7) of sorted xs.
func exactQuantile(sorted []float64, p float64) float64 {
	h := p * float64(len(sorted)-1)
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (h-lo)*(sorted[i+1]-sorted[i])
}

func TestRollupsWrittenTwiceAreNotDoubleCounted(t *testing.T) {
	ch := testharness.StartClickHouse(t)
	db := migratedDB(t, ch)
	s := newSink(t, sinkConfig(ch, db))
	rng := rand.New(rand.NewPCG(1, 2))
	key := schemas.Key{Tenant: "t1", Service: "chat", Model: "m1", Variant: "baseline"}
	var rs []schemas.Rollup
	var all, allTTFT []float64
	var wantSpans, wantErrors, wantIn, wantOut, wantCorr int64
	for m := 0; m < 60; m++ {
		r := makeRollup(rng, key, t0.Add(time.Duration(m)*time.Minute), 200)
		rs = append(rs, r)
		all = append(all, r.DurationsMs...)
		allTTFT = append(allTTFT, r.TTFTsMs...)
		wantSpans += r.N
		wantErrors += r.Errors
		wantIn += r.InputTokens
		wantOut += r.OutputTokens
		wantCorr += r.Corrections
	}
	slices.Sort(all)
	slices.Sort(allTTFT)

	conn := ch.ConnDatabase(t, db)
	type agg struct {
		rows, spans, errors, in, out, corr uint64
		q, ttftQ                           []float64
	}
	read := func() agg {
		var a agg
		err := conn.QueryRow(context.Background(), `SELECT count(), sum(spans), sum(errors), sum(input_tokens), sum(output_tokens),
			sum(corrections), quantilesTDigestMerge(`+QuantileLevelsSQL+`)(duration_ms_q),
			quantilesTDigestMerge(`+QuantileLevelsSQL+`)(ttft_ms_q)
			FROM span_rollups FINAL WHERE tenant = 't1' AND model = 'm1'`).Scan(&a.rows, &a.spans, &a.errors, &a.in, &a.out, &a.corr, &a.q, &a.ttftQ)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}

	write(t, s, schemas.Output{Rollups: rs})
	flush(t, s)
	once := read()
	// The replay: the same (key, minute) rows again, in two inserts and with
	// one minute duplicated inside a single insert.
	write(t, s, schemas.Output{Rollups: rs[:30]})
	flush(t, s)
	write(t, s, schemas.Output{Rollups: append(slices.Clone(rs[30:]), rs[45])})
	flush(t, s)
	twice := read()

	if once.rows != 60 || twice.rows != 60 {
		t.Errorf("rows after FINAL: %d then %d, want 60", once.rows, twice.rows)
	}
	for _, a := range []agg{once, twice} {
		if a.spans != uint64(wantSpans) || a.errors != uint64(wantErrors) || a.in != uint64(wantIn) ||
			a.out != uint64(wantOut) || a.corr != uint64(wantCorr) {
			t.Errorf("sums spans=%d errors=%d in=%d out=%d corrections=%d; want %d %d %d %d %d",
				a.spans, a.errors, a.in, a.out, a.corr, wantSpans, wantErrors, wantIn, wantOut, wantCorr)
		}
	}
	if !slices.Equal(once.q, twice.q) {
		t.Errorf("quantiles changed by the replay: %v then %v", once.q, twice.q)
	}
	if !slices.Equal(once.ttftQ, twice.ttftQ) {
		t.Errorf("TTFT quantiles changed by the replay: %v then %v", once.ttftQ, twice.ttftQ)
	}
	if len(once.q) != len(QuantileLevels) || len(once.ttftQ) != len(QuantileLevels) {
		t.Fatalf("%d duration and %d TTFT quantiles read back, want %d each", len(once.q), len(once.ttftQ), len(QuantileLevels))
	}
	// t-digest is approximate: within 2% of the range of the data for the
	// body, and the tail estimate between the neighbouring order statistics
	// of a slightly wider band.
	span := all[len(all)-1] - all[0]
	for i, p := range QuantileLevels {
		exact := exactQuantile(all, p)
		if !(math.Abs(once.q[i]-exact) <= 0.02*span) {
			t.Errorf("p%v: digest %v, exact %v (tolerance %v)", p, once.q[i], exact, 0.02*span)
		}
	}
	ttftSpan := allTTFT[len(allTTFT)-1] - allTTFT[0]
	for i, p := range QuantileLevels {
		exact := exactQuantile(allTTFT, p)
		if !(math.Abs(once.ttftQ[i]-exact) <= 0.02*ttftSpan) {
			t.Errorf("TTFT p%v: digest %v, exact %v (tolerance %v)", p, once.ttftQ[i], exact, 0.02*ttftSpan)
		}
	}
	var raw uint64
	if err := conn.QueryRow(context.Background(), "SELECT count() FROM span_rollups").Scan(&raw); err != nil {
		t.Fatal(err)
	}
	t.Logf("span_rollups: %d rows before FINAL, 60 after; p50..p99.9 %v, TTFT %v", raw, once.q, once.ttftQ)
}

func TestCommandsAreStoredOncePerTargetVersion(t *testing.T) {
	ch := testharness.StartClickHouse(t)
	db := migratedDB(t, ch)
	s := newSink(t, sinkConfig(ch, db))
	v := makeVerdict("tail", 1)
	cmd := schemas.FuseCommand{
		Target: v.Key, Action: schemas.ActionDegrade, Level: 1, State: schemas.StateOpen, Version: 3,
		IssuedAtUnixNano: v.WindowEndUnixNano, ExpiresAtUnixNano: v.WindowEndUnixNano + int64(10*time.Minute),
		Fallback: "m-small", Reasons: []schemas.Reason{{VerdictID: v.ID, Text: "p99.9 above budget"}},
		KeyID: "k1", Signature: "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881",
	}
	write(t, s, schemas.Output{Verdicts: []schemas.Verdict{v}, Commands: []schemas.FuseCommand{cmd}})
	flush(t, s)
	write(t, s, schemas.Output{Verdicts: []schemas.Verdict{v}, Commands: []schemas.FuseCommand{cmd}})
	flush(t, s)
	conn := ch.ConnDatabase(t, db)
	var n uint64
	var action, target string
	var reasons []string
	if err := conn.QueryRow(context.Background(), "SELECT count(), any(action), any(target), any(reason_verdict_ids) FROM fuse_commands FINAL").
		Scan(&n, &action, &target, &reasons); err != nil {
		t.Fatal(err)
	}
	if n != 1 || action != "degrade" || target != v.Key.String() || !slices.Equal(reasons, []string{v.ID}) {
		t.Errorf("fuse_commands FINAL: %d rows, action %q, target %q, reasons %v", n, action, target, reasons)
	}
}

func TestWriteRejectsInvalidRowsWithoutBuffering(t *testing.T) {
	ch := testharness.StartClickHouse(t)
	db := migratedDB(t, ch)
	s := newSink(t, sinkConfig(ch, db))
	good := makeVerdict("tail", 1)
	bad := makeVerdict("tail", 2)
	bad.Upper = math.Inf(1)
	err := s.Write(context.Background(), schemas.Output{Verdicts: []schemas.Verdict{good, bad}})
	if !errors.Is(err, schemas.ErrInvalid) {
		t.Fatalf("Write with an infinite bound: %v, want ErrInvalid", err)
	}
	r := makeRollup(rand.New(rand.NewPCG(1, 1)), good.Key, t0.Add(30*time.Second), 3)
	var fe *schemas.FieldError
	if err := s.Write(context.Background(), schemas.Output{Rollups: []schemas.Rollup{r}}); !errors.As(err, &fe) || fe.Field != "minute_unix_nano" {
		t.Fatalf("Write with an unaligned minute: %v, want a FieldError for minute_unix_nano", err)
	}
	flush(t, s)
	if m := metricValue(t, s, "fusebox_sink_records_total", TableVerdicts); m != 0 {
		t.Errorf("%v verdict rows inserted, want 0", m)
	}
}

func TestMissingSchemaIsReportedAndRecoversAfterMigrate(t *testing.T) {
	ch := testharness.StartClickHouse(t)
	db := ch.NewDatabase(t) // not migrated
	s := newSink(t, sinkConfig(ch, db))
	write(t, s, schemas.Output{Verdicts: []schemas.Verdict{makeVerdict("tail", 1)}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := s.Flush(ctx)
	var ie *InsertError
	if !errors.Is(err, ErrMisconfigured) || !errors.As(err, &ie) || ie.Table != TableVerdicts {
		t.Fatalf("Flush without tables: %v, want an InsertError for verdicts wrapping ErrMisconfigured", err)
	}
	if err := s.Write(ctx, schemas.Output{Verdicts: []schemas.Verdict{makeVerdict("tail", 2)}}); !errors.Is(err, ErrMisconfigured) {
		t.Fatalf("Write while misconfigured: %v, want ErrMisconfigured", err)
	}
	if _, err := Migrate(ctx, ch.Conn(t), db); err != nil {
		t.Fatal(err)
	}
	// The sink keeps retrying; once the table exists the row goes in.
	for {
		err := s.Flush(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("Flush after Migrate: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var n uint64
	if err := ch.ConnDatabase(t, db).QueryRow(ctx, "SELECT count() FROM verdicts FINAL").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("%d verdict rows, want 1", n)
	}
}

func TestWriteAfterCloseFails(t *testing.T) {
	ch := testharness.StartClickHouse(t)
	db := migratedDB(t, ch)
	s, err := New(sinkConfig(ch, db))
	if err != nil {
		t.Fatal(err)
	}
	write(t, s, schemas.Output{Verdicts: []schemas.Verdict{makeVerdict("tail", 1)}})
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Write(context.Background(), schemas.Output{}); !errors.Is(err, sinks.ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
	if m := metricValue(t, s, "fusebox_sink_records_total", TableVerdicts); m != 1 {
		t.Errorf("Close inserted %v rows, want 1", m)
	}
}

func TestConfigValidateNamesFields(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Database = "1bad-name"
	cfg.BatchSize = 0
	cfg.BufferCap = -1
	cfg.TLSCertFile = "cert.pem"
	err := cfg.Validate()
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *ConfigError
		if errors.As(e, &ce) {
			fields = append(fields, ce.Field)
		}
	}
	for _, f := range []string{"addrs", "database", "batch_size", "buffer_cap", "tls_cert_file"} {
		if !slices.Contains(fields, f) {
			t.Errorf("Validate did not name %s; got %v", f, fields)
		}
	}
	ok := DefaultConfig()
	ok.Addrs = []string{"127.0.0.1:9000"}
	if err := ok.Validate(); err != nil {
		t.Errorf("defaults with an address: %v", err)
	}
}

// metricValue returns the value of the metric with the given name and table
// label (any labels when table is ""); a missing metric fails the test.
func metricValue(t *testing.T, s *Sink, name, table string) float64 {
	t.Helper()
	for _, m := range s.Metrics() {
		if m.Name != name {
			continue
		}
		for _, l := range m.Labels {
			if l.Name == "table" && l.Value == table || table == "" {
				return m.Value
			}
		}
	}
	t.Fatalf("metric %s{table=%q} not reported", name, table)
	return math.NaN()
}

// With no server at all, Close gives up when its context ends and says how
// many rows were not inserted (the engine never committed them).
func TestCloseWithServerDownReportsPendingRows(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addrs = []string{"127.0.0.1:1"} // nothing listens on port 1
	cfg.DialTimeout = 200 * time.Millisecond
	cfg.RetryMin, cfg.RetryMax = 20*time.Millisecond, 100*time.Millisecond
	cfg.FlushInterval = 10 * time.Millisecond
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var vs []schemas.Verdict
	for i := 0; i < 10; i++ {
		vs = append(vs, makeVerdict("tail", i))
	}
	write(t, s, schemas.Output{Verdicts: vs})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err = s.Close(ctx)
	var fe *sinks.FlushError
	if !errors.As(err, &fe) || fe.Pending != 10 || fe.LastErr == nil {
		t.Fatalf("Close with the server down: %v, want a FlushError with 10 pending rows and the last insert error", err)
	}
	if e := metricValue(t, s, "fusebox_sink_errors_total", TableVerdicts); !(e >= 1) {
		t.Errorf("insert errors %v, want at least 1", e)
	}
}
