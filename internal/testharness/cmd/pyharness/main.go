// Command pyharness gives the Python client's tests (clients/python) what
// the Go suite's harness gives Go tests: an Apache Kafka broker, and a
// publisher of fuse commands signed by package fuse. For tests only.
//
//	pyharness apache
//	    starts a single-node Apache Kafka broker (testharness.LaunchApacheKafka:
//	    the jars in .cache/kafka-*/libs, or FUSEBOX_KAFKA_LIBS), prints
//	    "listening on HOST:PORT", and stops it when stdin closes or on
//	    SIGINT/SIGTERM. Without java or jars it prints "unavailable: REASON"
//	    and exits 3.
//
//	pyharness publish --brokers HOST:PORT --topic T --keys FILE [--partitions N]
//	    creates T (compacted, N partitions) unless it exists, then reads
//	    stdin line by line: a fuse command in its JSON form (key_id and
//	    signature ignored) is signed with the keyring's active key by
//	    fuse.Keyring.Sign and produced keyed by its target (or, as
//	    {"command":C,"key":K}, keyed by K); {"raw_hex":H,
//	    "key":K} produces the bytes H as they are; {"tombstone":K} a
//	    tombstone. Each record is answered, once the broker acknowledged it,
//	    with "ok PARTITION OFFSET VALUE_HEX" (or "error MESSAGE").
package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: pyharness apache | publish --brokers B --topic T --keys FILE")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "apache":
		os.Exit(apache())
	case "publish":
		os.Exit(publish(os.Args[2:]))
	}
	fmt.Fprintf(os.Stderr, "pyharness: unknown command %q\n", os.Args[1])
	os.Exit(2)
}

func apache() int {
	p, err := testharness.LaunchApacheKafka(testharness.WithFastCompaction())
	if errors.Is(err, testharness.ErrNoApacheKafka) {
		fmt.Printf("unavailable: %v\n", err)
		return 3
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "pyharness: apache kafka: %v\n", err)
		return 1
	}
	fmt.Printf("listening on %s\n", p.Bootstrap)
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-done:
	case <-sig:
	}
	if err := p.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "pyharness: %v\n", err)
		return 1
	}
	return 0
}

type line struct {
	RawHex    *string         `json:"raw_hex"`
	Key       string          `json:"key"`
	Tombstone *string         `json:"tombstone"`
	Command   json.RawMessage `json:"command"`
}

func publish(args []string) int {
	fs := flag.NewFlagSet("publish", flag.ContinueOnError)
	brokers := fs.String("brokers", "", "bootstrap `host:port`")
	topic := fs.String("topic", fuse.DefaultTopic, "fuse `topic`")
	keys := fs.String("keys", "", "key `file` (fuse.LoadKeyringFile's format)")
	partitions := fs.Int("partitions", 3, "partitions when the topic is created")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ring, err := fuse.LoadKeyringFile(*keys)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pyharness: %v\n", err)
		return 2
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(*brokers), kgo.DefaultProduceTopic(*topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		fmt.Fprintf(os.Stderr, "pyharness: %v\n", err)
		return 1
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	compact := "compact"
	_, err = kadm.NewClient(cl).CreateTopic(ctx, int32(*partitions), 1, map[string]*string{"cleanup.policy": &compact}, *topic)
	cancel()
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		fmt.Fprintf(os.Stderr, "pyharness: create topic %s: %v\n", *topic, err)
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<16), 4<<20)
	for in.Scan() {
		rec, err := record(ring, in.Bytes())
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err = cl.ProduceSync(ctx, rec).FirstErr()
			cancel()
		}
		if err != nil {
			fmt.Fprintf(out, "error %v\n", err)
		} else {
			fmt.Fprintf(out, "ok %d %d %s\n", rec.Partition, rec.Offset, hex.EncodeToString(rec.Value))
		}
		out.Flush()
	}
	return 0
}

// record turns one input line into the record to produce.
func record(ring *fuse.Keyring, b []byte) (*kgo.Record, error) {
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, err
	}
	switch {
	case l.Tombstone != nil:
		return &kgo.Record{Key: []byte(*l.Tombstone)}, nil
	case l.RawHex != nil:
		v, err := hex.DecodeString(*l.RawHex)
		if err != nil {
			return nil, err
		}
		if v == nil {
			v = []byte{}
		}
		return &kgo.Record{Key: []byte(l.Key), Value: v}, nil
	}
	key := ""
	if l.Command != nil {
		b, key = l.Command, l.Key
	}
	c, err := schemas.DecodeFuseCommand(b)
	if err != nil {
		return nil, err
	}
	c, err = ring.Sign(c)
	if err != nil {
		return nil, err
	}
	v, err := c.MarshalJSON()
	if err != nil {
		return nil, err
	}
	if key == "" {
		key = c.Target.String()
	}
	return &kgo.Record{Key: []byte(key), Value: v}, nil
}
