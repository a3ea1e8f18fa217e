package replay

import (
	"bytes"
	"flag"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
)

// keys100k adds the 100k-key cases of BenchmarkCheckpointKeys and
// BenchmarkHeapActiveKeys: each streams 13M calls (well over 5 CPU-minutes) and
// holds ~10 GB at its peak (a worker of 100k keys and its snapshot, then
// the restored worker beside the snapshot; run it with GOMEMLIMIT=9GiB on
// a 24 GB machine), so `-bench .` leaves it out:
//
//	go test ./internal/sim/replay -run '^$' -bench 'CheckpointKeys/keys100k' -benchtime 1x -cpu 1 -keys100k
var keys100k = flag.Bool("keys100k", false, "also run the 100k-key cases of the memory benchmarks")

// keyCases are the (tenants, services) sizes of the memory benchmarks:
// 50 x 20 (10k keys) and, with -keys100k, 250 x 40.
func keyCases() []keyCase {
	cs := []keyCase{{"keys10k", 50, 20}}
	if *keys100k {
		cs = append(cs, keyCase{"keys100k", 250, 40})
	}
	return cs
}

type keyCase struct {
	name              string
	tenants, services int
}

// smallKeys is the long tail of small keys of BenchmarkHeapActiveKeys:
// tenants × services × 5 models × 2 variants keys, each at 0.2 calls/s.
func smallKeys(tenants, services int) (traffic.Scenario, int) {
	sc := Quiet(traffic.Demo())
	sc.Tenants, sc.Services = names("t", tenants), names("svc", services)
	sc.Models = []string{"gpt-4o-mini", "claude-3-5-haiku", "llama-3-70b", "mistral-large", "gemini-flash"}
	keys := tenants * services * len(sc.Models) * 2
	sc.Rate = 0.2 * float64(keys)
	return sc, keys
}

// BenchmarkStatePerSmallKey: the state each processor of the production
// SLO file keeps per small key (0.2 calls/s, 11 minutes of event time: the
// 10-minute windows full, the decay hour not), one SLO at a time, 2,000
// keys (200 scope keys for scaling): live heap bytes and snapshot bytes
// per key, less an empty worker's. BenchmarkStatePerKey is the same for
// busy keys.
func BenchmarkStatePerSmallKey(b *testing.B) {
	sc, keys := smallKeys(50, 4)
	full := productionConfig(b)
	full.Guard.MaxTenants, full.Guard.MaxServices, full.Guard.MaxKeys = 0, 0, 1<<30
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
			n := keys
			if slo.Meta.SLO == "capacity" {
				n = 50 * 4 // (tenant, service) scopes
			}
			var snap int
			var heap uint64
			for range b.N {
				before := heapInUse()
				w, _, err := stream(cfg, sc, 11*time.Minute)
				if err != nil {
					b.Fatal(err)
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

// BenchmarkCheckpointKeys: one worker running every processor of the
// production SLO file with 10k (and, with -keys100k, 100k) small keys (as
// BenchmarkHeapActiveKeys: 0.2 calls/s each, 11 minutes of event time,
// keys.max_keys raised): its live heap and the process's RSS growth per
// key, its checkpoint's bytes per key, and the CPU seconds to write it
// (MarshalBinary: marshal the first checkpoint, remarshal the next one of
// the same state, which must be the same bytes) and to restore it
// (RestoreWorker), one op each.
func BenchmarkCheckpointKeys(b *testing.B) {
	for _, c := range keyCases() {
		b.Run(c.name, func(b *testing.B) {
			sc, keys := smallKeys(c.tenants, c.services)
			cfg := productionConfig(b)
			cfg.Guard.MaxTenants, cfg.Guard.MaxServices, cfg.Guard.MaxKeys = 0, 0, 1<<30
			var size int
			var heap uint64
			var rss int64
			var marshal, remarshal, restore time.Duration
			for range b.N {
				before, rss0 := heapInUse(), rssBytes()
				w, _, err := stream(cfg, sc, 11*time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				if l := w.Stats().LiveKeys; l != int64(keys) {
					b.Fatalf("%d live keys, want %d", l, keys)
				}
				heap, rss = heapInUse()-before, rssBytes()-rss0
				cpu0 := cpuTime()
				snap, err := w.MarshalBinary()
				if err != nil {
					b.Fatal(err)
				}
				marshal = cpuTime() - cpu0
				size = len(snap)
				// The next checkpoint, as a running worker writes it every
				// interval: each processor's buffer sized from the first.
				cpu0 = cpuTime()
				again, err := w.MarshalBinary()
				if err != nil {
					b.Fatal(err)
				}
				remarshal = cpuTime() - cpu0
				if !bytes.Equal(again, snap) {
					b.Fatal("a second checkpoint of the same state differs from the first")
				}
				again = nil
				w = nil
				heapInUse()
				cpu0 = cpuTime()
				r, _, err := engine.RestoreWorker(cfg, 0, snap)
				if err != nil {
					b.Fatal(err)
				}
				restore = cpuTime() - cpu0
				runtime.KeepAlive(r)
			}
			b.ReportMetric(float64(heap)/float64(keys), "heap-B/key")
			b.ReportMetric(float64(rss)/float64(keys), "rss-B/key")
			b.ReportMetric(float64(size)/float64(keys), "snapshot-B/key")
			b.ReportMetric(marshal.Seconds(), "marshal-cpu-s")
			b.ReportMetric(remarshal.Seconds(), "remarshal-cpu-s")
			b.ReportMetric(restore.Seconds(), "restore-cpu-s")
		})
	}
}

// rssBytes is the process's resident set (VmRSS), 0 when /proc is not
// there.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
