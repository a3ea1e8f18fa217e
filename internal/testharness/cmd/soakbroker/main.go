// Command soakbroker starts a single-node Apache Kafka broker for a long
// run of `fusebox bench soak` (docs/performance.md, "Soak: an hour of
// wall-clock time"): the embedded kfake broker keeps every record in the
// soak's own process, so an hour's checkpoints and traffic fill its memory,
// while Apache Kafka keeps them on disk and bounds them with retention and
// compaction, as a deployment's broker does. For development only.
//
//	soakbroker [-retention D] [-segment-bytes N] [-- COMMAND ARGS...]
//
// The broker is testharness.LaunchApacheKafka's (the jars in
// .cache/kafka-*/libs or FUSEBOX_KAFKA_LIBS, a 512 MiB JVM heap) with
// time-based retention of -retention (default 20m, longer than the soak's
// longest window) on every topic, segments of -segment-bytes (default
// 64 MiB) rolled at least every minute so that retention and the log
// cleaner reach them, and the cleaner looking every 100 ms.
//
// Without COMMAND it prints "listening on HOST:PORT" and runs until
// SIGINT or SIGTERM. With one, every argument "{{brokers}}" of it is
// replaced by HOST:PORT, it runs with this process's stdio, the broker
// stops when it exits, and soakbroker exits with its code (1 when it
// could not start). SIGINT and SIGTERM are passed on to it. Without java
// or the jars it prints "unavailable: REASON" and exits 3.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	fs := flag.NewFlagSet("soakbroker", flag.ContinueOnError)
	retention := fs.Duration("retention", 20*time.Minute, "time-based retention of every topic (log.retention.ms)")
	segment := fs.Int64("segment-bytes", 64<<20, "segment size (log.segment.bytes); segments also roll every minute")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *retention <= 0 || *segment < 1<<20 {
		fmt.Fprintln(os.Stderr, "soakbroker: -retention must be positive and -segment-bytes at least 1 MiB")
		return 2
	}
	p, err := testharness.LaunchApacheKafka(
		testharness.WithBrokerProperty("log.retention.ms", strconv.FormatInt(retention.Milliseconds(), 10)),
		testharness.WithBrokerProperty("log.retention.check.interval.ms", "30000"),
		testharness.WithBrokerProperty("log.segment.bytes", strconv.FormatInt(*segment, 10)),
		testharness.WithBrokerProperty("log.roll.ms", "60000"),
		// Compacted topics (the checkpoints, the fuse topic) keep their
		// tombstones a minute, not a day: each checkpoint tombstones the
		// previous generation's chunks.
		testharness.WithBrokerProperty("log.cleaner.delete.retention.ms", "60000"),
	)
	if errors.Is(err, testharness.ErrNoApacheKafka) {
		fmt.Printf("unavailable: %v\n", err)
		return 3
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "soakbroker: apache kafka: %v\n", err)
		return 1
	}
	defer func() {
		if err := p.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "soakbroker: stop: %v\n", err)
		}
	}()
	fmt.Printf("listening on %s\n", p.Bootstrap)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	cmdArgs := fs.Args()
	if len(cmdArgs) == 0 {
		<-sig
		return 0
	}
	for i, a := range cmdArgs {
		if a == "{{brokers}}" {
			cmdArgs[i] = p.Bootstrap
		}
	}
	cmd := exec.Command(cmdArgs[0], cmdArgs[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "soakbroker: %v\n", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sig:
			_ = cmd.Process.Signal(s)
		case err := <-done:
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return ee.ExitCode()
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "soakbroker: %v\n", err)
				return 1
			}
			return 0
		}
	}
}
