package pipeline_test

// What the restart and scale-out tests read back: the verdicts and fuse
// commands on the Kafka sink's topics, collected while a run goes on or
// read to the end afterwards, and compared value for value.

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/sim/replay"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// clusterOutput is what a run wrote to the verdict and fuse topics: each
// distinct verdict id with its record value (the verdict's stable JSON),
// each distinct fuse command (target and version) with its value.
type clusterOutput struct {
	verdicts map[string][]byte
	parsed   map[string]schemas.Verdict
	// written holds each distinct verdict's first record's timestamp:
	// when the Kafka sink produced it (the producer's clock; these tests
	// run fusebox in-process, so the test's clock).
	written  map[string]time.Time
	commands map[string][]byte
	// conflicts lists ids (or command keys) written with two different
	// values: a replay that did not reproduce its output.
	conflicts []string
	records   int // verdict records read, duplicates included
	// verdictTopic and fuseTopic are the topics read.
	verdictTopic, fuseTopic string
}

func newClusterOutput(verdictTopic, fuseTopic string) *clusterOutput {
	return &clusterOutput{verdicts: map[string][]byte{}, parsed: map[string]schemas.Verdict{}, written: map[string]time.Time{}, commands: map[string][]byte{},
		verdictTopic: verdictTopic, fuseTopic: fuseTopic}
}

func (o *clusterOutput) add(t *testing.T, r *kgo.Record) {
	switch r.Topic {
	case o.verdictTopic:
		o.records++
		v, err := sinks.UnmarshalVerdictJSON(r.Value)
		if err != nil {
			t.Errorf("bad verdict record at %s[%d]@%d: %v", r.Topic, r.Partition, r.Offset, err)
			return
		}
		if prev, ok := o.verdicts[v.ID]; ok {
			if !bytes.Equal(prev, r.Value) {
				o.conflicts = append(o.conflicts, fmt.Sprintf("verdict %s:\n  %s\n  %s", v.ID, prev, r.Value))
			}
			return
		}
		o.verdicts[v.ID] = slices.Clone(r.Value)
		o.parsed[v.ID] = v
		o.written[v.ID] = r.Timestamp
	case o.fuseTopic:
		c, err := schemas.DecodeFuseCommand(r.Value)
		if err != nil {
			t.Errorf("bad fuse record at %s[%d]@%d: %v", r.Topic, r.Partition, r.Offset, err)
			return
		}
		key := fmt.Sprintf("%s v%d", c.Target.String(), c.Version)
		if prev, ok := o.commands[key]; ok {
			if !bytes.Equal(prev, r.Value) {
				o.conflicts = append(o.conflicts, fmt.Sprintf("command %s:\n  %s\n  %s", key, prev, r.Value))
			}
			return
		}
		o.commands[key] = slices.Clone(r.Value)
	}
}

// clusterCollector consumes the verdict and fuse topics from the start, without a
// group, for as long as the test runs.
type clusterCollector struct {
	t      *testing.T
	mu     sync.Mutex
	out    *clusterOutput
	cancel context.CancelFunc
	done   chan struct{}
}

func startClusterCollector(t *testing.T, k *testharness.Kafka) *clusterCollector {
	t.Helper()
	return startOutputCollector(t, k, clusterVerdictTopic, clusterFuseTopic)
}

// startOutputCollector is startClusterCollector on other output topics.
func startOutputCollector(t *testing.T, k *testharness.Kafka, verdictTopic, fuseTopic string) *clusterCollector {
	t.Helper()
	cl := k.Client(t, kgo.ConsumeTopics(verdictTopic, fuseTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.MetadataMinAge(200*time.Millisecond), kgo.MetadataMaxAge(time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	c := &clusterCollector{t: t, out: newClusterOutput(verdictTopic, fuseTopic), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			c.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { c.out.add(t, r) })
			c.mu.Unlock()
		}
	}()
	t.Cleanup(c.stop)
	return c
}

func (c *clusterCollector) stop() {
	c.cancel()
	<-c.done
}

// count is the number of distinct verdict ids seen so far.
func (c *clusterCollector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.out.verdicts)
}

// missing returns how many of want's verdicts whose window ends at or
// before until (Unix ns) have not been seen yet, and one of them.
func (c *clusterCollector) missing(want *clusterOutput, until int64) (int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, example := 0, ""
	for id, v := range want.parsed {
		if v.WindowEndUnixNano > until {
			continue
		}
		if _, ok := c.out.verdicts[id]; !ok {
			n++
			example = fmt.Sprintf("%s %s %s window end +%v", v.Processor, v.Metric, v.Key.String(), time.Duration(v.WindowEndUnixNano-replay.Start.UnixNano()))
		}
	}
	return n, example
}

// missingReport lists (sorted, at most max) want's verdicts not seen yet
// whose window ends at or before until: id, processor, metric, key, the
// keyed partition its tenant routes to (of keyedPartitions), window end
// (offset from the traffic's start), status and N of the reference.
func (c *clusterCollector) missingReport(want *clusterOutput, until int64, keyedPartitions uint32, max int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for id, v := range want.parsed {
		if _, ok := c.out.verdicts[id]; ok || v.WindowEndUnixNano > until {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s %s key %s (keyed partition %d) window end +%v: %s n=%d", id, v.Processor, v.Metric, v.Key.String(),
			schemas.TenantHash(v.Key.Tenant)%keyedPartitions, time.Duration(v.WindowEndUnixNano-replay.Start.UnixNano()), v.Status, v.N))
	}
	slices.Sort(out)
	if len(out) > max {
		out = append(out[:max], fmt.Sprintf("... and %d more", len(out)-max))
	}
	return out
}

// missingCommands returns how many of want's fuse commands (target and
// version) have not been seen yet, and one of them.
func (c *clusterCollector) missingCommands(want *clusterOutput) (int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, example := 0, ""
	for key := range want.commands {
		if _, ok := c.out.commands[key]; !ok {
			n++
			example = key
		}
	}
	return n, example
}

// readClusterOutput reads the verdict and fuse topics up to their end offsets now.
func readClusterOutput(t *testing.T, k *testharness.Kafka) *clusterOutput {
	t.Helper()
	return readOutput(t, k, clusterVerdictTopic, clusterFuseTopic)
}

// readOutput is readClusterOutput on other output topics.
func readOutput(t *testing.T, k *testharness.Kafka, verdictTopic, fuseTopic string) *clusterOutput {
	t.Helper()
	adm := kadm.NewClient(k.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, verdictTopic, fuseTopic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int32]kgo.Offset{}
	remaining := map[string]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s[%d]: %v", o.Topic, o.Partition, o.Err)
		}
		if o.Offset > 0 {
			if want[o.Topic] == nil {
				want[o.Topic] = map[int32]kgo.Offset{}
			}
			want[o.Topic][o.Partition] = kgo.NewOffset().AtStart()
			remaining[fmt.Sprint(o.Topic, o.Partition)] = o.Offset
		}
	})
	out := newClusterOutput(verdictTopic, fuseTopic)
	if len(want) == 0 {
		return out
	}
	cl := k.Client(t, kgo.ConsumePartitions(want))
	for len(remaining) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading the output topics: %d partitions not read to their end", len(remaining))
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s[%d]: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			out.add(t, r)
			key := fmt.Sprint(r.Topic, r.Partition)
			if end, ok := remaining[key]; ok && r.Offset+1 >= end {
				delete(remaining, key)
			}
		})
	}
	return out
}

// compareClusterOutputs fails unless got holds exactly want's verdicts and
// commands, value for value, and no id was written with two values.
func compareClusterOutputs(t *testing.T, name string, want, got *clusterOutput) {
	t.Helper()
	for _, c := range got.conflicts {
		t.Errorf("%s: written twice with different values: %s", name, c)
	}
	bad := 0
	report := func(format string, args ...any) {
		if bad++; bad <= 10 {
			t.Errorf(name+": "+format, args...)
		}
	}
	for id, w := range want.verdicts {
		g, ok := got.verdicts[id]
		switch {
		case !ok:
			v := want.parsed[id]
			report("verdict %s missing (%s %s %s at +%v)", id, v.Processor, v.Metric, v.Key.String(), time.Duration(v.WindowEndUnixNano-replay.Start.UnixNano()))
		case !bytes.Equal(w, g):
			report("verdict %s differs:\n got: %s\nwant: %s", id, g, w)
		}
	}
	for id, g := range got.verdicts {
		if _, ok := want.verdicts[id]; !ok {
			report("extra verdict %s: %s", id, g)
		}
	}
	for key, w := range want.commands {
		if g, ok := got.commands[key]; !ok {
			report("fuse command %s missing", key)
		} else if !bytes.Equal(w, g) {
			report("fuse command %s differs:\n got: %s\nwant: %s", key, g, w)
		}
	}
	for key := range got.commands {
		if _, ok := want.commands[key]; !ok {
			report("extra fuse command %s: %s", key, got.commands[key])
		}
	}
	if bad > 10 {
		t.Errorf("%s: %d differences in all", name, bad)
	}
}
