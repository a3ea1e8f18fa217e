package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Timing of KafkaWatch.
const (
	// kafkaWatchEvery is how often the watch asks for the metadata of
	// fusebox's topics and probes their leaders: one metadata request and
	// one ApiVersions request per leading broker.
	kafkaWatchEvery = time.Second
	// kafkaProbeTimeout bounds one probe; a broker slower than this is
	// counted as unreachable for that poll.
	kafkaProbeTimeout = 2 * time.Second
	// kafkaWatchListed is how many partitions one reason names before it
	// says "and N more".
	kafkaWatchListed = 4
)

// KafkaWatch makes the loss of a Kafka broker loud: every kafkaWatchEvery
// it reads the metadata of the topics fusebox reads and writes and asks
// each partition's leader for its API versions. A partition without a
// leader, or whose leader does not answer (a killed broker is still named
// leader until the controller fences it, after broker.session.timeout.ms),
// and one with fewer in-sync replicas than topics.min_insync_replicas
// (acks=all writes are refused) make /readyz not ready, naming the broker
// and the partitions; it logs (WARN) when such an outage begins, when what
// it names changes, and when it ends, with how long it lasted. A broker
// that is down while every partition has a reachable leader elsewhere is
// no outage: fusebox reads and writes on.
type KafkaWatch struct {
	cl     *kgo.Client
	topics []string
	minISR int
	log    *slog.Logger

	mu      sync.Mutex
	reasons []string
	key     string // what the reasons name, without error texts
	since   time.Time
}

// NewKafkaWatch watches topics through cl (an admin client, not closed by
// the watch); minISR is topics.min_insync_replicas (0: not checked).
func NewKafkaWatch(cl *kgo.Client, topics []string, minISR int, log *slog.Logger) *KafkaWatch {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &KafkaWatch{cl: cl, topics: slices.Compact(slices.Sorted(slices.Values(topics))), minISR: minISR, log: log}
}

// Run polls until ctx ends.
func (w *KafkaWatch) Run(ctx context.Context) {
	t := time.NewTicker(kafkaWatchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.poll(ctx)
		}
	}
}

// Reasons are the current outage's reasons, for /readyz; nil when none.
func (w *KafkaWatch) Reasons() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.reasons) == 0 {
		return nil
	}
	out := slices.Clone(w.reasons)
	out[0] = fmt.Sprintf("kafka outage for %v: %s", time.Since(w.since).Round(time.Second), out[0])
	return out
}

func (w *KafkaWatch) poll(ctx context.Context) {
	reasons, key := w.check(ctx)
	if ctx.Err() != nil {
		return // shutting down: the failed requests say nothing
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case key != "" && w.key == "":
		w.since = now
		w.log.Warn("kafka outage: partitions fusebox reads or writes have no reachable leader; their verdicts wait", "reasons", strings.Join(reasons, "; "))
	case key != "" && key != w.key:
		w.log.Warn("kafka outage changed", "reasons", strings.Join(reasons, "; "), "for", now.Sub(w.since).Round(time.Millisecond).String())
	case key == "" && w.key != "":
		// WARN, as the start: an operator filtering on WARN sees when it ended.
		w.log.Warn("kafka outage over: every partition has a reachable leader", "lasted", now.Sub(w.since).Round(time.Millisecond).String(),
			"was", strings.Join(w.reasons, "; "))
	}
	w.reasons, w.key = reasons, key
}

// check returns the outage's reasons now, and a key naming what they
// name (brokers and partitions, no error text), "" when there is none.
func (w *KafkaWatch) check(ctx context.Context) ([]string, string) {
	mctx, cancel := context.WithTimeout(ctx, kafkaProbeTimeout)
	defer cancel()
	m, err := kadm.NewClient(w.cl).Metadata(mctx, w.topics...)
	td := m.Topics
	if err != nil {
		return []string{"no metadata from any broker: " + err.Error()}, "metadata"
	}
	var noLeader, underISR []string
	led := map[int32][]string{}
	for _, topic := range w.topics {
		d, ok := td[topic]
		if !ok || d.Err != nil {
			continue // not created yet, or auto-created on first use
		}
		for _, p := range d.Partitions.Sorted() {
			name := fmt.Sprintf("%s[%d]", topic, p.Partition)
			switch {
			case p.Leader < 0:
				noLeader = append(noLeader, name)
			default:
				led[p.Leader] = append(led[p.Leader], name)
			}
			if w.minISR > 0 && p.Leader >= 0 && len(p.ISR) < w.minISR {
				underISR = append(underISR, fmt.Sprintf("%s (%d in sync)", name, len(p.ISR)))
			}
		}
	}
	var reasons, keys []string
	if len(noLeader) > 0 {
		reasons = append(reasons, "partitions without a leader: "+listSome(noLeader))
		keys = append(keys, "none:"+strings.Join(noLeader, ","))
	}
	ids := slices.Sorted(func(yield func(int32) bool) {
		for id := range led {
			if !yield(id) {
				return
			}
		}
	})
	for _, id := range ids {
		if err := w.probe(ctx, id); err != nil {
			addr := "unknown address"
			for _, b := range m.Brokers {
				if b.NodeID == id {
					addr = fmt.Sprintf("%s:%d", b.Host, b.Port)
				}
			}
			reasons = append(reasons, fmt.Sprintf("broker %d (%s) unreachable, leader of %s: %v", id, addr, listSome(led[id]), err))
			keys = append(keys, fmt.Sprintf("broker %d:%s", id, strings.Join(led[id], ",")))
		}
	}
	if len(underISR) > 0 {
		reasons = append(reasons, fmt.Sprintf("partitions below min.insync.replicas %d, writes refused: %s", w.minISR, listSome(underISR)))
		keys = append(keys, "isr:"+strings.Join(underISR, ","))
	}
	return reasons, strings.Join(keys, ";")
}

// probe asks broker id for its API versions.
func (w *KafkaWatch) probe(ctx context.Context, id int32) error {
	pctx, cancel := context.WithTimeout(ctx, kafkaProbeTimeout)
	defer cancel()
	_, err := w.cl.Broker(int(id)).Request(pctx, kmsg.NewPtrApiVersionsRequest())
	return err
}

// listSome lists the first kafkaWatchListed names, then how many more.
func listSome(names []string) string {
	if len(names) <= kafkaWatchListed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:kafkaWatchListed], ", "), len(names)-kafkaWatchListed)
}
