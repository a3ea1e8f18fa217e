package replay

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/engine/router"
)

// Interleaving chooses which source partition the router reads next: it
// gets the indexes (into Sources) of the partitions with messages left and
// the sources themselves with the next message index of each, and returns
// one of the indexes.
type Interleaving func(remaining []int, src Sources, next []int) int

// ByTime reads the partition whose next message holds the oldest event
// time: a router keeping up with live traffic.
func ByTime(remaining []int, src Sources, next []int) int {
	best, bestT := remaining[0], int64(math.MaxInt64)
	for _, i := range remaining {
		if t := firstTime(&src[i].Messages[next[i]]); t < bestT {
			best, bestT = i, t
		}
	}
	return best
}

// Sequential drains one partition before the next: a router catching up a
// backlog one partition at a time (the worst case for the watermark).
func Sequential(remaining []int, _ Sources, _ []int) int { return remaining[0] }

// Reversed is Sequential from the last partition (corrections first).
func Reversed(remaining []int, _ Sources, _ []int) int { return remaining[len(remaining)-1] }

// Random picks a partition at random, from a seeded generator.
func Random(seed uint64) Interleaving {
	r := rand.New(rand.NewPCG(seed, ^seed))
	return func(remaining []int, _ Sources, _ []int) int { return remaining[r.IntN(len(remaining))] }
}

func firstTime(m *Message) int64 {
	t := int64(math.MaxInt64)
	for i := range m.Spans {
		t = min(t, m.Spans[i].EndUnixNano)
	}
	for i := range m.Corrections {
		t = min(t, m.Corrections[i].TimeUnixNano)
	}
	return t
}

// RouteConfig configures Route.
type RouteConfig struct {
	// KeyedPartitions is the keyed topic's partition count. Default 4.
	KeyedPartitions int32
	// ByTenant partitions by tenant (the SLO file keys by tenant).
	// Default true; set NotByTenant to turn it off.
	NotByTenant bool
	// HeartbeatEvery is the splitter's heartbeat cadence (event time).
	// Default 1s, the router's.
	HeartbeatEvery time.Duration
	// Order is the interleaving of source partitions. Default ByTime.
	Order Interleaving
	// Pauses are quiet periods of the publishers: every message whose
	// first event time is before a pause's At is routed before any after
	// it, then every source is marked idle (as the router does once a
	// source stays silent for its idle timeout), and the messages after
	// At are routed in the pause's Order (default: Order). Sorted by At.
	Pauses []Pause
	// OpenEnd leaves the sources live at the end. By default every source
	// is marked idle once drained, as the router does after its idle
	// timeout, so the watermark reaches the newest event time minus the
	// allowed lateness and the last windows close.
	OpenEnd bool
}

// Pause is a quiet period of every publisher (see RouteConfig.Pauses).
type Pause struct {
	At    int64 // Unix ns
	Order Interleaving
}

// Route runs the router's splitters over the sources and returns each keyed
// partition's records in the order the router would write them, with
// offsets, source references and headers as the keyed stage decodes them.
func Route(src Sources, cfg RouteConfig) [][]engine.KeyedRecord {
	if cfg.KeyedPartitions <= 0 {
		cfg.KeyedPartitions = 4
	}
	if cfg.Order == nil {
		cfg.Order = ByTime
	}
	splitters := make([]*router.Splitter, len(src))
	counts := map[string]int{}
	for i, p := range src {
		splitters[i] = router.NewSplitter(p.Topic, p.Partition, cfg.KeyedPartitions, router.SplitterConfig{
			ByTenant: !cfg.NotByTenant, HeartbeatEvery: cfg.HeartbeatEvery})
		counts[p.Topic]++
	}
	announce := announceTopics(counts)
	out := make([][]engine.KeyedRecord, cfg.KeyedPartitions)
	emit := func(outs []router.Out) {
		for _, o := range outs {
			recs := &out[o.Partition]
			*recs = append(*recs, engine.KeyedRecord{
				Offset: int64(len(*recs)), Source: o.Source, SourceMaxEventTime: o.SourceMax,
				SourceTopics: announce, Idle: o.Idle,
				Spans: slices.Clone(o.Spans), Corrections: slices.Clone(o.Corrections),
			})
		}
	}
	next := make([]int, len(src))
	remaining := make([]int, 0, len(src))
	order := cfg.Order
	pauses := cfg.Pauses
	for {
		limit := int64(math.MaxInt64)
		if len(pauses) > 0 {
			limit = pauses[0].At
		}
		remaining = remaining[:0]
		for i := range src {
			if next[i] < len(src[i].Messages) && firstTime(&src[i].Messages[next[i]]) < limit {
				remaining = append(remaining, i)
			}
		}
		if len(remaining) == 0 {
			if len(pauses) == 0 {
				break
			}
			for _, s := range splitters {
				emit(s.MarkIdle())
			}
			if pauses[0].Order != nil {
				order = pauses[0].Order
			}
			pauses = pauses[1:]
			continue
		}
		i := order(remaining, src, next)
		m := &src[i].Messages[next[i]]
		next[i]++
		emit(splitters[i].Split(m.Offset, m.Spans, m.Corrections))
	}
	if !cfg.OpenEnd {
		for _, s := range splitters {
			emit(s.MarkIdle())
		}
	}
	return out
}

func announceTopics(counts map[string]int) string {
	topics := make([]string, 0, len(counts))
	for t := range counts {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	s := ""
	for i, t := range topics {
		if i > 0 {
			s += ","
		}
		s += t + ":" + strconv.Itoa(counts[t])
	}
	return s
}
