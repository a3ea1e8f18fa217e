package main

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/sim/gen"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/pipeline"
)

const genDescription = `Publishes realistic LLM-serving traffic to Kafka: OTLP span batches (GenAI
semantic conventions; the non-LLM spans of the same traces mixed in, as a
service's Collector exports them) to --spans-topic, and user-correction
events (JSON, one per message) to --corrections-topic. The traffic comes
from a seeded scenario (--scenario FILE, default the built-in demo; see
examples/scenario.yaml) that scripts incidents in event time: tail
blow-ups, canary drift, alignment decay, correction spikes, traffic-mix
shifts, error bursts. The same scenario and seed always write the same
records.

Event time starts at --start and runs --speedup times faster than the wall
clock (0: as fast as the broker takes it). By default it starts far enough
in the past to reach the wall clock exactly when the scenario ends
(now - duration*(1 - 1/speedup); now - duration with --speedup 0), so it
never runs ahead of the wall clock: reports "--to now" cover all of it
once gen is done, and nothing is from the future. A scenario without a
duration starts now. --start now makes event time run ahead of the wall
clock (fuse commands then expire that much later than the wall clock, and
fusebox dead-letters events too far ahead of their record timestamps; see
docs/gateways.md, "The command clock"). Messages are unkeyed (the
Collector's default), or one per trace keyed by its trace id with
--key-by-trace (the Collector's partition_traces_by_id); keyed messages are
partitioned as the Collector does (Sarama-compatible FNV-1a). Progress goes
to stderr every --progress-every, a summary to stdout at the end. SIGINT or
SIGTERM stops generating and waits for the records in flight.

Examples:
  fusebox gen --brokers 127.0.0.1:9092 --speedup 60
  fusebox gen --scenario examples/scenario.yaml --seed 7 --rate 1000 --duration 10m --speedup 0
  FUSEBOX_KAFKA_PASSWORD=secret fusebox gen --brokers kafka:9093 --tls \
      --sasl-mechanism SCRAM-SHA-512 --sasl-user gen --key-by-trace`

func cmdGen(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var kf kafkaFlags
	cfg := gen.DefaultConfig()
	var (
		scenarioFile string
		seed         uint64
		rate         float64
		duration     time.Duration
		startS       string
	)
	fs := newFlagSet("gen", "[flags]", genDescription, stdout)
	kf.register(fs, "fusebox-gen")
	fs.StringVar(&cfg.SpansTopic, "spans-topic", cfg.SpansTopic, "`topic` of the span batches")
	fs.StringVar(&cfg.CorrectionsTopic, "corrections-topic", cfg.CorrectionsTopic, "`topic` of the correction events")
	fs.StringVar(&cfg.Encoding, "encoding", cfg.Encoding, "span `encoding`: otlp_proto or otlp_json")
	fs.StringVar(&scenarioFile, "scenario", "", "scenario YAML `file` (default: the built-in demo scenario)")
	fs.Uint64Var(&seed, "seed", 0, "random `seed` (default: the scenario's)")
	fs.Float64Var(&rate, "rate", 0, "LLM calls per second of event time (default: the scenario's)")
	fs.Var((*daysValue)(&duration), "duration", "event `time` to generate: 90m, 2h, 1d (default 0: the scenario's; a scenario without one runs until stopped)")
	fs.Float64Var(&cfg.Speedup, "speedup", cfg.Speedup, "event time runs this many times faster than wall time; 0: no pacing")
	fs.StringVar(&startS, "start", "", "event `time` of the first call: RFC 3339, a date, now, or now-DURATION such as now-1d (default: reach the wall clock at the end)")
	fs.IntVar(&cfg.SpansPerMessage, "spans-per-message", cfg.SpansPerMessage, "most spans in one message (a Collector export batch), grouped by service")
	fs.BoolVar(&cfg.KeyByTrace, "key-by-trace", false, "one message per trace keyed by its 32-hex trace id, like the Collector's partition_traces_by_id")
	fs.DurationVar(&cfg.ProgressEvery, "progress-every", cfg.ProgressEvery, "wall `interval` between progress lines; 0: none")
	fs.DurationVar(&cfg.FlushTimeout, "flush-timeout", cfg.FlushTimeout, "wait this long for records in flight when stopping")
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	usageErr := func(err error) int {
		fmt.Fprintf(stderr, "fusebox gen: %v\n", err)
		return exitUsage
	}
	if scenarioFile != "" {
		sc, err := traffic.LoadScenario(scenarioFile)
		if err != nil {
			return usageErr(fmt.Errorf("--scenario: %w", err))
		}
		cfg.Scenario = *sc
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["seed"] {
		cfg.Scenario.Seed = seed
	}
	if set["rate"] {
		if !(rate > 0) {
			return usageErr(fmt.Errorf("--rate %v: must be positive", rate))
		}
		cfg.Scenario.Rate = rate
	}
	if cfg.SpansPerMessage < 1 || cfg.SpansPerMessage > gen.MaxSpansPerMessage {
		return usageErr(fmt.Errorf("--spans-per-message %d: want 1 to %d", cfg.SpansPerMessage, gen.MaxSpansPerMessage))
	}
	if duration < 0 {
		return usageErr(fmt.Errorf("--duration %v: must not be negative", duration))
	}
	if duration > 0 {
		cfg.Scenario.Duration = duration
	}
	now := time.Now().UTC()
	start := defaultGenStart(now, cfg.Scenario.Duration, cfg.Speedup)
	if startS != "" {
		var err error
		if start, err = parseTimeArg(startS, now); err != nil {
			return usageErr(fmt.Errorf("--start: %w", err))
		}
	}
	cfg.Start = start
	if err := cfg.Validate(); err != nil {
		return usageErr(err)
	}
	if cfg.ProgressEvery > 0 { // 0: no progress lines
		cfg.Progress = func(p gen.Progress) { fmt.Fprintln(stderr, progressLine(p, cfg.Start)) }
	}
	opts, err := kf.opts()
	if err != nil {
		return usageErr(err)
	}

	cl, err := kgo.NewClient(append(opts,
		kgo.AllowAutoTopicCreation(),
		// Keyed messages land where the Collector's kafka exporter puts
		// them: its default sticky-key partitioner with Sarama's FNV-1a.
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(kgo.SaramaCompatHasher(fnv32a))),
	)...)
	if err != nil {
		fmt.Fprintf(stderr, "fusebox gen: kafka client: %v\n", err)
		return exitFailure
	}
	defer cl.Close()
	pctx, pcancel := context.WithTimeout(ctx, 15*time.Second)
	err = cl.Ping(pctx)
	pcancel()
	if err != nil {
		err = pipeline.WrapKafkaAuth(err, kf.saslMechanism != "")
		fmt.Fprintf(stderr, "fusebox gen: no Kafka broker answers at %s: %v\n", kf.brokers, err)
		return exitFailure
	}
	var topics []string
	for _, t := range []string{cfg.SpansTopic, cfg.CorrectionsTopic} {
		if t != "" {
			topics = append(topics, t)
		}
	}
	if err := genTopicsReady(ctx, cl, genTopicsTimeout, topics...); err != nil {
		fmt.Fprintf(stderr, "fusebox gen: %v\n", pipeline.WrapKafkaAuth(err, kf.saslMechanism != ""))
		return exitFailure
	}
	fmt.Fprintf(stderr, "fusebox gen: %s\n", describeGen(&cfg, kf.brokers))

	sum, err := gen.Run(ctx, cfg, cl)
	fmt.Fprintln(stdout, summaryLine(sum, &cfg))
	if err != nil {
		fmt.Fprintf(stderr, "fusebox gen: %v\n", err)
		return exitFailure
	}
	return exitOK
}

func fnv32a(b []byte) uint32 {
	h := fnv.New32a()
	h.Write(b)
	return h.Sum32()
}

// defaultGenStart is the event time gen starts at without --start: such
// that event time, running speedup times faster than the wall clock from
// now, reaches the wall clock when the scenario's duration d is done —
// now - d*(1 - 1/speedup) — and so is never ahead of it. With speedup 0
// (no pacing) it is now - d; without a duration, or at speedup <= 1, now.
func defaultGenStart(now time.Time, d time.Duration, speedup float64) time.Time {
	switch {
	case d <= 0:
		return now
	case speedup == 0:
		return now.Add(-d)
	case speedup <= 1:
		return now
	}
	return now.Add(-time.Duration(float64(d) * (1 - 1/speedup))).Truncate(time.Second)
}

// describeGen is the line printed at start.
func describeGen(cfg *gen.Config, brokers string) string {
	sc := &cfg.Scenario
	dur := "until stopped"
	if sc.Duration > 0 {
		dur = sc.Duration.String() + " of event time"
	}
	var kinds []string
	for _, inc := range sc.Incidents {
		kinds = append(kinds, string(inc.Kind))
	}
	pace := fmt.Sprintf("speedup %g", cfg.Speedup)
	if cfg.Speedup == 0 {
		pace = "unpaced"
	}
	key := "unkeyed"
	if cfg.KeyByTrace {
		key = "keyed by trace id"
	}
	return fmt.Sprintf("scenario %s, seed %d, %g calls/s, %s from %s (%s); %d incidents [%s]; %s and %s on %s (%s, %s)",
		sc.Name, sc.Seed, sc.Rate, dur, cfg.Start.UTC().Format(time.RFC3339), pace, len(sc.Incidents), strings.Join(kinds, " "),
		cfg.SpansTopic, cfg.CorrectionsTopic, brokers, cfg.Encoding, key)
}

func progressLine(p gen.Progress, start time.Time) string {
	return fmt.Sprintf("fusebox gen: %6.1fs  event %s (+%v)  spans %d (%.0f/s)  other %d  corrections %d  messages %d  %s",
		p.Wall.Seconds(), p.EventTime.UTC().Format(time.RFC3339), p.EventTime.Sub(start).Round(time.Second),
		p.Spans, p.SpansPerSecond, p.OtherSpans, p.Corrections, p.SpanMessages+p.CorrectionMessages, bytesText(p.Bytes))
}

func summaryLine(s gen.Summary, cfg *gen.Config) string {
	how := "done"
	if s.Stopped {
		how = "stopped"
	}
	return fmt.Sprintf("%s: %d LLM spans and %d other spans in %d messages to %s (%s), %d corrections to %s, %s; event time %s to %s in %v",
		how, s.Spans, s.OtherSpans, s.SpanMessages, cfg.SpansTopic, cfg.Encoding, s.Corrections, cfg.CorrectionsTopic,
		bytesText(s.Bytes), s.EventStart.UTC().Format(time.RFC3339), s.EventEnd.UTC().Format(time.RFC3339), s.Wall.Round(time.Millisecond))
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
