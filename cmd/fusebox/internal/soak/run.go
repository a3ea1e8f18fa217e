package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/broker"
	"github.com/fusebox-dev/fusebox/internal/config"
)

// Result is what a soak measured.
type Result struct {
	Samples []Sample
	Series  []SeriesResult
	// Calls is the LLM calls produced.
	Calls int64
	// Exit is the child's exit after SIGTERM (nil: exit 0).
	Exit error
	// LogPath holds the child's stderr.
	LogPath string
	// FailedSamples counts samples that failed (a scrape that timed out);
	// the soak goes on unless maxFailedSamples fail in a row.
	FailedSamples int
	Options       Options
}

// Grew lists the series that grew.
func (r *Result) Grew() []string {
	var out []string
	for _, s := range r.Series {
		if s.Grows {
			out = append(out, s.Name)
		}
	}
	return out
}

// errExited is the child's exit before the soak ended.
var errExited = errors.New("soak: fusebox exited")

// maxFailedSamples is how many samples in a row may fail before the soak
// gives up on the process.
const maxFailedSamples = 5

// readyTimeout bounds the wait for the child's /readyz.
const readyTimeout = 2 * time.Minute

// Run starts the broker (unless Options.Brokers), the child `fusebox
// run`, and the traffic; samples every Options.Every until
// Options.Duration has passed; then stops the traffic, sends the child
// SIGTERM and judges the series. An error means the soak could not run
// (bad options, the child not ready or dead, a failed scrape, the
// traffic refused); growth is in the Result, not an error.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.ConfigYAML == "" {
		o.ConfigYAML = DefaultConfigYAML()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	res := &Result{Options: o}
	brokers := o.Brokers
	if len(brokers) == 0 {
		b, err := broker.Start(ctx, broker.Config{Listen: "127.0.0.1:0", Partitions: 6, AutoCreateTopics: true, LogLevel: "none"})
		if err != nil {
			return nil, fmt.Errorf("soak: start the embedded broker: %w", err)
		}
		defer b.Close()
		brokers = []string{b.Addr()}
	}
	listen, err := freeAddr()
	if err != nil {
		return nil, err
	}
	yaml, err := render(o.ConfigYAML, brokers, listen)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Parse("soak.yaml", []byte(yaml))
	if err != nil {
		return nil, fmt.Errorf("soak: the SLO file: %w", err)
	}
	dir, err := os.MkdirTemp("", "fusebox-soak-")
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "soak.yaml")
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		return nil, err
	}
	res.LogPath = o.LogPath
	if res.LogPath == "" {
		res.LogPath = filepath.Join(dir, "fusebox.log") // kept: the report names it
	} else {
		defer os.RemoveAll(dir)
	}
	logf, err := os.Create(res.LogPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()

	if err := createSources(ctx, brokers, cfg); err != nil {
		return nil, err
	}
	args := append(append([]string(nil), o.Command[1:]...), "run", "--config", cfgPath, "--insecure-unsigned")
	cmd := exec.Command(o.Command[0], args...)
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("soak: start %s: %w", o.Command[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	reaped := false
	defer func() {
		if !reaped {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	hc := &http.Client{Timeout: 10 * time.Second}
	if err := waitReady(ctx, hc, "http://"+listen+"/readyz", exited); err != nil {
		if errors.Is(err, errExited) {
			reaped = true
		}
		return nil, fmt.Errorf("%w (its log: %s)", err, res.LogPath)
	}
	o.Logger.Info("soak: fusebox ready", "pid", cmd.Process.Pid, "listen", listen, "log", res.LogPath)

	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(10*time.Millisecond), kgo.AllowAutoTopicCreation())
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	f := &feeder{o: &o, cl: prod, spans: cfg.Topics.Spans[0], corr: cfg.Topics.Corrections[0]}
	fctx, stopFeed := context.WithCancel(ctx)
	defer stopFeed()
	fed := make(chan error, 1)
	go func() { fed <- f.run(fctx) }()

	s := &sampler{pid: cmd.Process.Pid, metrics: "http://" + listen + "/metrics", client: hc}
	start := time.Now()
	tick := time.NewTicker(o.Every)
	defer tick.Stop()
	failedInARow := 0
	sampleNow := func() error {
		smp, err := s.sample(ctx, time.Since(start))
		if err != nil {
			// One slow or failed scrape is reported, not fatal: a
			// process that stops answering fails the soak after
			// maxFailedSamples in a row. Its goroutines are saved when
			// it serves pprof (http.pprof), to see where it hangs.
			res.FailedSamples++
			failedInARow++
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "%8s  sample failed (%d in a row): %v\n", time.Since(start).Round(time.Second), failedInARow, err)
			}
			saveGoroutines(hc, "http://"+listen+"/debug/pprof/goroutine?debug=2", fmt.Sprintf("%s.goroutines.%d", res.LogPath, res.FailedSamples))
			if failedInARow >= maxFailedSamples {
				return fmt.Errorf("soak: %d samples in a row failed, the last: %w", failedInARow, err)
			}
			return nil
		}
		failedInARow = 0
		res.Samples = append(res.Samples, smp)
		if o.Progress != nil {
			writeProgress(o.Progress, &smp, f.produced.Load())
		}
		return nil
	}
	if err := sampleNow(); err != nil {
		return nil, err
	}
	feeding := true
	for feeding {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-exited:
			reaped = true
			return nil, fmt.Errorf("soak: fusebox exited during the soak: %v (its log: %s)", err, res.LogPath)
		case err := <-fed:
			if err != nil {
				return nil, err
			}
			feeding = false
		case <-tick.C:
			if err := sampleNow(); err != nil {
				return nil, err
			}
		}
	}
	if err := sampleNow(); err != nil {
		return nil, err
	}
	res.Calls = f.produced.Load()

	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		res.Exit = err
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		res.Exit = fmt.Errorf("soak: fusebox did not exit within 2m of SIGTERM: %w", errors.Join(<-exited))
	}
	reaped = true
	for _, sr := range allSeries {
		res.Series = append(res.Series, judge(sr, res.Samples, o.WarmUp.Minutes()))
	}
	return res, nil
}

// freeAddr returns a loopback address no one listens on now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// waitReady polls url until it answers 200, the process exits or
// readyTimeout passes.
func waitReady(ctx context.Context, hc *http.Client, url string, exited <-chan error) error {
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("%w before it was ready: %v", errExited, err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if resp, err := hc.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("soak: fusebox not ready at %s after %v", url, readyTimeout)
}

// createSources creates the source topics (6 partitions) unless they
// exist: fusebox is ready only once its group owns source partitions.
func createSources(ctx context.Context, brokers []string, cfg *config.File) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	topics := append(append([]string(nil), cfg.Topics.Spans...), cfg.Topics.Corrections...)
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopics(cctx, 6, -1, nil, topics...)
	if err != nil {
		return fmt.Errorf("soak: create the source topics: %w", err)
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("soak: create source topic %s: %w", r.Topic, r.Err)
		}
	}
	return nil
}

// saveGoroutines writes the goroutine dump at url to path, if the process
// serves it; errors are ignored (a diagnosis, not a measurement).
func saveGoroutines(hc *http.Client, url, path string) {
	resp, err := hc.Get(url)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = io.Copy(f, resp.Body)
}
