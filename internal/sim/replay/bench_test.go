package replay

// Throughput benchmarks of the keyed stage. Run them on one core so that
// spans/s is per core (the garbage collector shares it):
//
//	go test ./internal/sim/replay -run '^$' -bench . -benchtime 3x -cpu 1
//
// Each op is a whole pass over the traffic with fresh workers (records
// applied twice to one worker would be duplicates), so -benchtime Nx sets
// the number of passes.

import (
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/engine/router"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/twmb/franz-go/pkg/kgo"
)

// benchTraffic is the demo traffic (no incidents) at rate calls/s, 20
// minutes of it at 400 calls/s, 5 minutes at higher rates, routed onto 4
// keyed partitions, kept for every benchmark.
type benchTraffic struct {
	src   Sources
	keyed [][]engine.KeyedRecord
	recs  []*kgo.Record // the sources as published (OTLP protobuf, correction JSON)
	spans int
}

var benchCache sync.Map // rate -> *benchTraffic

func trafficAt(b *testing.B, rate float64) *benchTraffic {
	b.Helper()
	if v, ok := benchCache.Load(rate); ok {
		return v.(*benchTraffic)
	}
	sc := Quiet(traffic.Demo())
	sc.Rate = rate
	d := 20 * time.Minute
	if rate > 400 {
		d = 5 * time.Minute
	}
	src, err := Generate(sc, Start, d, GenConfig{SpansPerMessage: 100})
	if err != nil {
		b.Fatal(err)
	}
	recs, err := Records(src)
	if err != nil {
		b.Fatal(err)
	}
	bt := &benchTraffic{src: src, keyed: Route(src, RouteConfig{}), recs: recs, spans: src.Spans()}
	benchCache.Store(rate, bt)
	return bt
}

func productionConfig(b *testing.B) engine.WorkerConfig {
	b.Helper()
	cfg, _, err := Production()
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}

// applyAll feeds every keyed partition's records to a fresh worker.
func applyAll(b *testing.B, cfg engine.WorkerConfig, keyed [][]engine.KeyedRecord) {
	for p, recs := range keyed {
		w, err := engine.NewWorker(cfg, int32(p))
		if err != nil {
			b.Fatal(err)
		}
		for i := range recs {
			w.Apply(&recs[i])
			w.TakeOutput()
		}
	}
}

// reportSpans reports throughput per wall second and per second of CPU
// time of the whole process (every thread: the GC's too), which is the
// per-core figure on a shared machine; run with -cpu 1.
func reportSpans(b *testing.B, spans int, cpuStart time.Duration) {
	n := float64(spans) * float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "spans/s")
	cpu := cpuTime() - cpuStart
	b.ReportMetric(n/cpu.Seconds(), "spans/cpu-s")
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/span")
}

// cpuTime is the user + system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWorkerDecodeExcluded: pre-built keyed records (decoded spans)
// through engine.Worker with every processor of the production SLO file,
// the rollups and the breaker, evaluations included. Traffic: the demo's
// 36 keys at 400 calls/s (~670 spans per key per minute, 20 minutes) and
// at 4000 calls/s (~6700 a minute, 5 minutes: the drift and decay sample
// caps bite and evaluation cost is spread over more spans).
func BenchmarkWorkerDecodeExcluded(b *testing.B) {
	for _, rate := range []float64{400, 4000} {
		b.Run(rateName(rate), func(b *testing.B) {
			bt := trafficAt(b, rate)
			cfg := productionConfig(b)
			b.ResetTimer()
			cpu0 := cpuTime()
			for range b.N {
				applyAll(b, cfg, bt.keyed)
			}
			reportSpans(b, bt.spans, cpu0)
		})
	}
}

// BenchmarkWorkerIngestOnly is BenchmarkWorkerDecodeExcluded with an
// allowed lateness longer than the traffic, so that no evaluation runs:
// the cost of folding spans into state alone.
func BenchmarkWorkerIngestOnly(b *testing.B) {
	for _, rate := range []float64{400, 4000} {
		b.Run(rateName(rate), func(b *testing.B) {
			bt := trafficAt(b, rate)
			cfg := productionConfig(b)
			cfg.AllowedLateness = 2 * time.Hour
			b.ResetTimer()
			cpu0 := cpuTime()
			for range b.N {
				applyAll(b, cfg, bt.keyed)
			}
			reportSpans(b, bt.spans, cpu0)
		})
	}
}

// BenchmarkWorkerPerProcessor is BenchmarkWorkerDecodeExcluded at 400
// calls/s with one SLO at a time (no breaker), and with none: where the
// time goes.
func BenchmarkWorkerPerProcessor(b *testing.B) {
	bt := trafficAt(b, 400)
	full := productionConfig(b)
	for _, slo := range full.SLOs {
		b.Run(slo.Meta.SLO, func(b *testing.B) {
			cfg := full
			cfg.SLOs = []engine.SLOSpec{slo}
			cfg.NewBreaker = nil
			b.ResetTimer()
			cpu0 := cpuTime()
			for range b.N {
				applyAll(b, cfg, bt.keyed)
			}
			reportSpans(b, bt.spans, cpu0)
		})
	}
	b.Run("none", func(b *testing.B) {
		cfg := full
		cfg.SLOs, cfg.NewBreaker = nil, nil
		b.ResetTimer()
		cpu0 := cpuTime()
		for range b.N {
			applyAll(b, cfg, bt.keyed)
		}
		reportSpans(b, bt.spans, cpu0)
	})
}

// BenchmarkDecodeIncluded: from the published bytes — OTLP protobuf
// TracesData (100 spans a message) and correction JSON — through
// schemas.DecodeOTLPProto / DecodeCorrection, the router's Splitter (which
// also encodes each keyed batch) and the workers, at 400 calls/s. The
// keyed stage's decode of the keyed batch is left out (it reads what the
// Splitter just encoded); Kafka is left out.
func BenchmarkDecodeIncluded(b *testing.B) {
	bt := trafficAt(b, 400)
	cfg := productionConfig(b)
	b.ResetTimer()
	cpu0 := cpuTime()
	for range b.N {
		decodeAndApply(b, cfg, bt)
	}
	reportSpans(b, bt.spans, cpu0)
}

// decodeAndApply is one pass of BenchmarkDecodeIncluded: bt's published
// records decoded, split onto 4 keyed partitions and applied to fresh
// workers.
func decodeAndApply(b *testing.B, cfg engine.WorkerConfig, bt *benchTraffic) {
	names, lim := schemas.DefaultAttributeNames(), schemas.DefaultLimits()
	counts := map[string]int{}
	for _, p := range bt.src {
		counts[p.Topic]++
	}
	announce := announceTopics(counts)
	var spans []schemas.Span
	workers := make([]*engine.Worker, 4)
	for p := range workers {
		w, err := engine.NewWorker(cfg, int32(p))
		if err != nil {
			b.Fatal(err)
		}
		workers[p] = w
	}
	splitters := map[int32]*router.Splitter{}
	corr := router.NewSplitter(CorrectionTopic, 0, 4, router.SplitterConfig{ByTenant: true})
	offsets := make([]int64, 4)
	type tp struct {
		topic string
		p     int32
	}
	next := map[tp]int64{}
	for _, r := range bt.recs {
		var outs []router.Out
		off := next[tp{r.Topic, r.Partition}]
		next[tp{r.Topic, r.Partition}]++
		if r.Topic == CorrectionTopic {
			c, err := schemas.DecodeCorrection(r.Value)
			if err != nil {
				b.Fatal(err)
			}
			outs = corr.Split(off, nil, []schemas.Correction{c})
		} else {
			var err error
			spans, _, err = schemas.DecodeOTLPProto(r.Value, names, lim, spans[:0])
			if err != nil {
				b.Fatal(err)
			}
			s := splitters[r.Partition]
			if s == nil {
				s = router.NewSplitter(SpanTopic, r.Partition, 4, router.SplitterConfig{ByTenant: true})
				splitters[r.Partition] = s
			}
			outs = s.Split(off, spans, nil)
		}
		for _, o := range outs {
			rec := engine.KeyedRecord{Offset: offsets[o.Partition], Source: o.Source, SourceMaxEventTime: o.SourceMax,
				SourceTopics: announce, Idle: o.Idle, Spans: o.Spans, Corrections: o.Corrections}
			offsets[o.Partition]++
			workers[o.Partition].Apply(&rec)
			workers[o.Partition].TakeOutput()
		}
	}
}

func rateName(rate float64) string { return fmt.Sprintf("calls%g", rate) }

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkStatePerKey: the state each processor of the production SLO file
// keeps per key after 70 minutes of the demo traffic at 400 calls/s (every
// window full, the decay hour included): snapshot bytes (MarshalBinary of
// a worker running only that SLO, less an empty worker's) and live heap
// bytes, per key. 36 keys (6 scope keys for scaling).
func BenchmarkStatePerKey(b *testing.B) {
	sc := Quiet(traffic.Demo())
	src, err := Generate(sc, Start, 70*time.Minute, GenConfig{SpansPerMessage: 100})
	if err != nil {
		b.Fatal(err)
	}
	keyed := Route(src, RouteConfig{KeyedPartitions: 1, NotByTenant: true, OpenEnd: true})
	keys := map[schemas.Key]bool{}
	scopes := map[[2]string]bool{}
	for _, p := range src {
		for _, m := range p.Messages {
			for i := range m.Spans {
				keys[m.Spans[i].Key] = true
				scopes[[2]string{m.Spans[i].Key.Tenant, m.Spans[i].Key.Service}] = true
			}
		}
	}
	full := productionConfig(b)
	empty := full
	empty.SLOs, empty.NewBreaker = nil, nil
	w0, err := engine.NewWorker(empty, 0)
	if err != nil {
		b.Fatal(err)
	}
	base, err := w0.MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	for _, slo := range full.SLOs {
		b.Run(slo.Meta.SLO, func(b *testing.B) {
			cfg := empty
			cfg.SLOs = []engine.SLOSpec{slo}
			n := len(keys)
			if slo.Meta.SLO == "capacity" {
				n = len(scopes)
			}
			var snap int
			var heap uint64
			for range b.N {
				before := heapInUse()
				w, err := engine.NewWorker(cfg, 0)
				if err != nil {
					b.Fatal(err)
				}
				for i := range keyed[0] {
					w.Apply(&keyed[0][i])
					w.TakeOutput()
				}
				heap = heapInUse() - before
				s, err := w.MarshalBinary()
				if err != nil {
					b.Fatal(err)
				}
				snap = len(s) - len(base)
				runtime.KeepAlive(w)
			}
			b.ReportMetric(float64(snap)/float64(n), "snapshot-B/key")
			b.ReportMetric(float64(heap)/float64(n), "heap-B/key")
			b.ReportMetric(float64(n), "keys")
		})
	}
}

// BenchmarkHeapActiveKeys: the live heap (and the process's RSS growth) of
// one worker running every processor of the production SLO file (and the
// rollups and the breaker) with 10k and (with -keys100k) 100k active keys (keys.max_keys
// off), each key at 0.2 calls/s (12 a minute, a
// long tail of small keys), after 11 minutes of event time (the 10-minute
// windows full). Traffic is generated, routed and applied as a stream, so
// the input is not part of the heap.
func BenchmarkHeapActiveKeys(b *testing.B) {
	for _, c := range keyCases() {
		b.Run(c.name, func(b *testing.B) {
			sc := Quiet(traffic.Demo())
			sc.Tenants, sc.Services = names("t", c.tenants), names("svc", c.services)
			sc.Models = []string{"gpt-4o-mini", "claude-3-5-haiku", "llama-3-70b", "mistral-large", "gemini-flash"}
			keys := c.tenants * c.services * len(sc.Models) * 2
			sc.Rate = 0.2 * float64(keys)
			cfg := productionConfig(b)
			// keys.max_keys raised: at its default (2000 per keyed
			// partition) the keys beyond it fold into one busy overflow key.
			cfg.Guard.MaxTenants, cfg.Guard.MaxServices, cfg.Guard.MaxKeys = 0, 0, 1<<30
			var heap uint64
			var rss int64
			var spans int64
			cpu0 := cpuTime()
			for range b.N {
				before, rss0 := heapInUse(), rssBytes()
				w, n, err := stream(cfg, sc, 11*time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				if l := w.Stats().LiveKeys; l != int64(keys) {
					b.Fatalf("%d live keys, want %d", l, keys)
				}
				heap, spans = heapInUse()-before, n
				rss = rssBytes() - rss0
				runtime.KeepAlive(w)
			}
			b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
			b.ReportMetric(float64(rss)/(1<<20), "rss-growth-MiB")
			b.ReportMetric(float64(heap)/float64(keys), "heap-B/key")
			b.ReportMetric(float64(spans), "spans")
			b.ReportMetric(float64(spans)*float64(b.N)/(cpuTime()-cpu0).Seconds(), "spans/cpu-s")
		})
	}
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}

// stream generates d of sc's traffic and applies it, as it is generated,
// to one worker (one keyed partition, two source partitions: spans and
// corrections).
func stream(cfg engine.WorkerConfig, sc traffic.Scenario, d time.Duration) (*engine.Worker, int64, error) {
	g, err := traffic.New(sc, Start)
	if err != nil {
		return nil, 0, err
	}
	w, err := engine.NewWorker(cfg, 0)
	if err != nil {
		return nil, 0, err
	}
	sp := router.NewSplitter(SpanTopic, 0, 1, router.SplitterConfig{})
	co := router.NewSplitter(CorrectionTopic, 0, 1, router.SplitterConfig{})
	announce := CorrectionTopic + ":1," + SpanTopic + ":1"
	var off, spOff, coOff, n int64
	apply := func(outs []router.Out) {
		for _, o := range outs {
			rec := engine.KeyedRecord{Offset: off, Source: o.Source, SourceMaxEventTime: o.SourceMax,
				SourceTopics: announce, Idle: o.Idle, Spans: o.Spans, Corrections: o.Corrections}
			off++
			w.Apply(&rec)
			w.TakeOutput()
		}
	}
	for g.Offset() < d {
		bt := g.Next(250 * time.Millisecond)
		for i := 0; i < len(bt.Spans); i += 100 {
			apply(sp.Split(spOff, bt.Spans[i:min(i+100, len(bt.Spans))], nil))
			spOff++
		}
		n += int64(len(bt.Spans))
		if len(bt.Corrections) > 0 {
			apply(co.Split(coOff, nil, bt.Corrections))
			coOff++
		}
	}
	return w, n, nil
}
