package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/fusebox-dev/fusebox/internal/broker"
)

const brokerDescription = `Runs franz-go's kfake, a Kafka-protocol broker, as a standalone process, so
the demo and development need no Kafka install. One broker, no replication:
not for production traffic. Prints "listening on HOST:PORT" on stdout when
clients can connect; SIGINT or SIGTERM closes it (with --data-dir, after
writing its state).

Examples:
  fusebox broker
  fusebox broker --data-dir ./kafka-data \
      --topic otlp_spans:6 --topic fusebox.fuse:6:cleanup.policy=compact
  fusebox broker --listen 0.0.0.0:9092 --sasl-user SCRAM-SHA-512:fusebox:secret`

func cmdBroker(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg := broker.DefaultConfig()
	cfg.LogOutput = stderr
	fs := newFlagSet("broker", "[flags]", brokerDescription, stdout)
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "`host:port` to listen on and advertise to clients (port 0: any free port)")
	fs.StringVar(&cfg.DataDir, "data-dir", "", "`directory` that keeps topics, records and group offsets across restarts (default: in memory)")
	fs.BoolVar(&cfg.SyncWrites, "sync-writes", false, "fsync every produced batch before acknowledging it (needs --data-dir)")
	fs.IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "partitions of topics created on first use")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "broker log `level`: none, error, warn, info, debug")
	fs.Func("topic", "create a topic at start: `NAME:PARTITIONS[:key=value,...]` (repeatable), e.g. fusebox.fuse:6:cleanup.policy=compact",
		func(s string) error {
			t, err := broker.ParseTopicSpec(s)
			if err != nil {
				return brokerFlagError(err)
			}
			cfg.Topics = append(cfg.Topics, t)
			return nil
		})
	fs.Func("sasl-user", "require SASL and add a user: `MECHANISM:USER:PASSWORD` with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable)",
		func(s string) error {
			u, err := broker.ParseSASLUser(s)
			if err != nil {
				return brokerFlagError(err)
			}
			cfg.Users = append(cfg.Users, u)
			return nil
		})
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "fusebox %v\n", err)
		return exitUsage
	}

	b, err := broker.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "fusebox %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "listening on %s\n", b.Addr())
	fmt.Fprintf(stderr, "fusebox broker: %s\n", describeBroker(cfg))
	<-ctx.Done()
	fmt.Fprintln(stderr, "fusebox broker: shutting down")
	b.Close()
	fmt.Fprintln(stderr, "fusebox broker: stopped")
	return exitOK
}

// brokerFlagError drops the "broker: --flag" prefix that the FlagSet's own
// message ("invalid value ... for flag -topic: ...") already carries.
func brokerFlagError(err error) error {
	if ce, ok := err.(*broker.ConfigError); ok {
		return fmt.Errorf("%s", ce.Reason)
	}
	return err
}

// describeBroker is the one-line summary printed at start; it never shows
// passwords.
func describeBroker(cfg broker.Config) string {
	var parts []string
	if cfg.DataDir != "" {
		s := "data dir " + cfg.DataDir
		if cfg.SyncWrites {
			s += " (sync writes)"
		}
		parts = append(parts, s)
	} else {
		parts = append(parts, "in memory (records are lost on exit; use --data-dir to keep them)")
	}
	var topics []string
	for _, t := range cfg.Topics {
		topics = append(topics, fmt.Sprintf("%s:%d", t.Name, t.Partitions))
	}
	if len(topics) > 0 {
		parts = append(parts, "topics "+strings.Join(topics, " "))
	}
	parts = append(parts, fmt.Sprintf("new topics get %d partitions", cfg.Partitions))
	if len(cfg.Users) > 0 {
		var users []string
		for _, u := range cfg.Users {
			users = append(users, u.Mechanism+":"+u.User)
		}
		sort.Strings(users)
		parts = append(parts, "SASL required, users "+strings.Join(users, " "))
	}
	return strings.Join(parts, "; ")
}
