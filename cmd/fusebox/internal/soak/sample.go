package soak

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one reading of the process under test.
type Sample struct {
	// At is the wall time since traffic started.
	At time.Duration
	// RSS is the resident set (VmRSS of /proc/<pid>/status), bytes.
	RSS float64
	// HeapGoal is the Go runtime's next-GC heap goal
	// (go_memstats_next_gc_bytes), bytes: about twice the live heap at
	// the last GC with GOGC=100, and smooth where the heap in use is a
	// sawtooth.
	HeapGoal float64
	// Goroutines is go_goroutines.
	Goroutines float64
	// FDs is the number of entries of /proc/<pid>/fd.
	FDs float64
	// Checkpoint is the sum over keyed partitions of
	// fusebox_checkpoint_bytes, bytes.
	Checkpoint float64
	// GCPauseMax is the longest of the recent GC pauses
	// (go_gc_duration_seconds{quantile="1"}), seconds: an upper bound of
	// their P99.
	GCPauseMax float64
	// Lag is the largest fusebox_event_time_lag_seconds over keyed
	// partitions, seconds.
	Lag float64
	// Verdicts is fusebox_verdicts_total summed, a counter.
	Verdicts float64
}

// sampler reads a process's /proc entries and its /metrics.
type sampler struct {
	pid     int
	metrics string // URL of /metrics
	client  *http.Client
}

func (s *sampler) sample(ctx context.Context, at time.Duration) (Sample, error) {
	out := Sample{At: at}
	rss, err := vmRSS(s.pid)
	if err != nil {
		return out, err
	}
	out.RSS = rss
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.pid))
	if err != nil {
		return out, fmt.Errorf("soak: count the open files: %w", err)
	}
	out.FDs = float64(len(fds))
	fams, err := s.scrape(ctx)
	if err != nil {
		return out, err
	}
	out.HeapGoal = sum(fams, "go_memstats_next_gc_bytes")
	out.Goroutines = sum(fams, "go_goroutines")
	out.Checkpoint = sum(fams, "fusebox_checkpoint_bytes")
	out.Lag = maxOf(fams, "fusebox_event_time_lag_seconds")
	out.Verdicts = sum(fams, "fusebox_verdicts_total")
	if f := fams["go_gc_duration_seconds"]; f != nil {
		for _, m := range f.Metric {
			for _, q := range m.GetSummary().GetQuantile() {
				if q.GetQuantile() == 1 {
					out.GCPauseMax = q.GetValue()
				}
			}
		}
	}
	return out, nil
}

func (s *sampler) scrape(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.metrics, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("soak: scrape %s: %w", s.metrics, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("soak: scrape %s: HTTP %d", s.metrics, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("soak: parse %s: %w", s.metrics, err)
	}
	return fams, nil
}

// value is a counter's, gauge's or untyped series' value.
func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

func sum(fams map[string]*dto.MetricFamily, name string) float64 {
	var s float64
	if f := fams[name]; f != nil {
		for _, m := range f.Metric {
			s += value(m)
		}
	}
	return s
}

func maxOf(fams map[string]*dto.MetricFamily, name string) float64 {
	var x float64
	if f := fams[name]; f != nil {
		for i, m := range f.Metric {
			if v := value(m); i == 0 || v > x {
				x = v
			}
		}
	}
	return x
}

// vmRSS reads VmRSS of /proc/<pid>/status, in bytes.
func vmRSS(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("soak: read the process's status: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return 0, fmt.Errorf("soak: VmRSS %q: %w", rest, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("soak: /proc/%d/status has no VmRSS", pid)
}
