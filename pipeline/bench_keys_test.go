package pipeline_test

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/schemas"
)

// keysConfig is the e2e SLO file's processors (burn rate, tail, drift,
// corrections) plus the rollups and the breaker, with max_keys set.
func keysConfig(t testing.TB, maxKeys int) engine.WorkerConfig {
	t.Helper()
	y := "version: keys-v1\nsigning: {insecure_unsigned: true}\n" +
		"keys: {max_tenants: 100000, max_models: 100000, max_keys: " + strconv.Itoa(maxKeys) + "}\n" + e2eSLOs
	f, err := config.Parse("keys.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	wc, err := config.WorkerConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	return wc
}

// floodKeys feeds a worker one minute of event time in which each of
// tenants × models keys sends perKey spans, in records of 100 spans, and
// returns the worker.
func floodKeys(t testing.TB, w *engine.Worker, tenants, models, perKey int, off *int64, base int64) {
	t.Helper()
	var spans []schemas.Span
	seq := uint64(*off) << 20
	flush := func(end int64) {
		*off++
		w.Apply(&engine.KeyedRecord{Offset: *off, Source: engine.SourceRef{Topic: "s", Partition: 0, Offset: *off},
			SourceTopics: "s:1", SourceMaxEventTime: end, Spans: spans})
		w.TakeOutput()
		spans = spans[:0]
	}
	n := tenants * models * perKey
	for i := 0; i < n; i++ {
		k := i % (tenants * models)
		end := base + int64(i)*int64(time.Minute)/int64(n)
		seq++
		s := liveSpan(seq, "t"+strconv.Itoa(k/models), "m"+strconv.Itoa(k%models), time.Unix(0, end))
		spans = append(spans, s)
		if len(spans) == 100 {
			flush(end)
		}
	}
	if len(spans) > 0 {
		flush(base + int64(time.Minute))
	}
}

// heapAfterGC is the live heap in bytes.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// rssBytes is the process's resident set (Linux), 0 elsewhere.
func rssBytes() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			var kb uint64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:")), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkLiveKeyMemory measures the heap (and RSS growth) that 10,000
// live keys take in one keyed partition worker running the e2e SLO file
// (burn rate, tail, drift, corrections, rollups, breaker), each key with
// 20 spans in the last minute: the figure behind keys.max_keys.
func BenchmarkLiveKeyMemory(b *testing.B) {
	const tenants, models, perKey = 500, 20, 20
	base := time.Unix(1_800_000_000, 0).UnixNano()
	for i := 0; i < b.N; i++ {
		before, rss0 := heapAfterGC(), rssBytes()
		w, err := engine.NewWorker(keysConfig(b, 0), 0)
		if err != nil {
			b.Fatal(err)
		}
		var off int64
		floodKeys(b, w, tenants, models, perKey, &off, base)
		after, rss1 := heapAfterGC(), rssBytes()
		if got := w.Stats().Spans; got != tenants*models*perKey {
			b.Fatalf("%d spans applied", got)
		}
		b.ReportMetric(float64(after-before)/(1<<20), "heap-MiB/10k-keys")
		b.ReportMetric(float64(rss1-rss0)/(1<<20), "rss-growth-MiB/10k-keys")
		runtime.KeepAlive(w)
	}
}
