package engine

import (
	"math"
	"slices"

	"github.com/fusebox-dev/fusebox/processors/snapcodec"
)

// sourceID is a source partition.
type sourceID struct {
	Topic     string
	Partition int32
}

// sourceState is what a partition worker knows of one source partition.
type sourceState struct {
	// lastOffset is the newest source offset folded in: a keyed record
	// from this source at or below it is a duplicate written by a router
	// that restarted before committing, and is skipped.
	lastOffset int64
	lastPart   int32
	// maxEventTime is the newest event time the router had seen on this
	// source partition (Unix ns), math.MinInt64 before any.
	maxEventTime int64
	// firstMax is the SourceMaxEventTime of the first record heard from
	// this source that carried one: the newest event time of the source's
	// first record the router read, which depends only on the source
	// partition's contents, not on how the router interleaved sources.
	firstMax int64
	// idle is set when the router declared the source idle (no records for
	// its idle timeout); an idle source does not hold the watermark back.
	idle bool
	// idleFor is, while idle, the longest silence (wall time, ns) the
	// idle markers said (see watermarks.silent): how long it had brought
	// no valid event. 0 when not idle or not known (a source without
	// event time, one not live).
	idleFor int64
	// lastAt is the Kafka timestamp (Unix ns) of the newest data record
	// (spans, corrections or a heartbeat, duplicates excepted) of this
	// source in the keyed partition: the router's wall clock when it
	// routed the source's progress up to maxEventTime. 0 when unknown
	// (no record since a checkpoint of format 5 or older, or records
	// without a timestamp).
	lastAt int64
}

// watermarks tracks every source partition feeding one keyed partition.
//
// The watermark is min over non-idle sources of maxEventTime, minus the
// allowed lateness. Taking the minimum over sources (rather than the newest
// event time seen) means that a record is never late because another source
// partition ran ahead — a router catching up a backlog on one partition
// while another is current — only when it is more than the allowed lateness
// behind records before it in its own source partition. That keeps the
// verdicts independent of how the router interleaves its sources.
type watermarks struct {
	lateness int64
	// liveLag is how far behind the wall clock a source's newest event
	// time may be for its silence to advance the watermark
	// (WorkerConfig.LiveLag; the lateness when 0).
	liveLag int64
	// partitions is the number of partitions of each source topic, as the
	// router last announced; sources not heard from yet hold the watermark
	// at -inf, so the first records of a slow source are not late.
	partitions map[string]int32
	sources    map[sourceID]*sourceState
}

func newWatermarks(latenessNanos, liveLagNanos int64) *watermarks {
	if liveLagNanos <= 0 {
		liveLagNanos = latenessNanos
	}
	return &watermarks{lateness: latenessNanos, liveLag: liveLagNanos, partitions: map[string]int32{}, sources: map[sourceID]*sourceState{}}
}

func (w *watermarks) source(id sourceID) *sourceState {
	s := w.sources[id]
	if s == nil {
		s = &sourceState{lastOffset: -1, maxEventTime: math.MinInt64, firstMax: math.MinInt64}
		w.sources[id] = s
	}
	return s
}

// current is the watermark: math.MinInt64 while any announced source has
// not been heard from. While some source is not idle it is
//
//	min over non-idle sources s of E_s, minus L
//
// where E_s is the newest event time the router had seen on s and L the
// allowed lateness. When every source is idle (every publisher paused),
// nothing more is coming for now, and the watermark advances with the
// wall clock since the sources went silent, as the keyed topic records
// it: the Kafka timestamp of a source's newest idle marker minus that of
// its newest data record (D_s, sourceState.idleFor; the router's stamp
// where that is unknown; 0 for a source that was not live, see silent):
//
//	max( max_s E_s , min_s (E_s + D_s) ) - L
//
// over the sources with an event time. The first term closes the windows
// every source has passed; the second lets the window holding the last
// records close too, once the pause is long enough (a quiet service at
// night, the end of a burst), instead of waiting for the next record.
// Its bound keeps a record arriving during the pause within the allowed
// lateness counted: a record that reaches the router D after its source's
// last valid event (D at least the D_s of every marker before it) and
// whose event time is at least E_s + D - L — no more than L behind its
// source's newest event time plus the wall time since — is never late
// because of the advance, since the watermark stays at or below
// E_s + D_s - L. In a live deployment, whose event times follow the wall
// clock, that is every record at most L behind the clock (plus the
// pipeline's delay for its source's last one). The markers are records of
// the keyed topic, so a replay advances the same way.
func (w *watermarks) current() int64 {
	wm := int64(math.MaxInt64)
	newest := int64(math.MinInt64)
	reach := int64(math.MaxInt64)
	any := false
	for topic, n := range w.partitions {
		for p := int32(0); p < n; p++ {
			s := w.sources[sourceID{topic, p}]
			if s == nil {
				return math.MinInt64
			}
			newest = max(newest, s.maxEventTime)
			if s.maxEventTime != math.MinInt64 {
				reach = min(reach, satAdd(s.maxEventTime, s.idleFor))
			}
			if s.idle {
				continue
			}
			any = true
			if s.maxEventTime < wm {
				wm = s.maxEventTime
			}
		}
	}
	if !any {
		wm = newest
		if reach != math.MaxInt64 {
			wm = max(wm, reach)
		}
	}
	if wm == math.MinInt64 {
		return math.MinInt64
	}
	return wm - w.lateness
}

// satAdd is a+b for b >= 0, math.MaxInt64 where that overflows.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// silent records the silence an idle marker says, when the source is
// live, and reports whether the marker was refused because the source is
// not live.
//
// The silence is measured from the keyed topic's own Kafka timestamps
// whenever both are known: D = the marker's timestamp minus that of the
// source's newest data record here (sourceState.lastAt), and the source
// is live when that record's timestamp was at most liveLag after its
// newest event time. Both are the router's wall clock when it produced
// the records, so they are data of the keyed topic: a replay decides the
// same, and — unlike the router's own stamp (rec.IdleFor, rec.SeenAt) —
// the measure survives a router restart: a restarted router (a new pod, a
// rebalance during the pause) starts with no event time and no last-seen
// time of its own, and its markers carry no stamp, yet their timestamps
// still say how long the source has been silent. (The routers' clocks
// should agree to well within the lateness, as NTP keeps them.)
//
// Only without those timestamps (a worker restored from a format-5 or
// older checkpoint before the source's next data record, or records
// without a timestamp) does it fall back to the router's stamp: live when
// rec.SeenAt - rec.SourceMaxEventTime <= liveLag, D = rec.IdleFor.
//
// A source further behind than liveLag is a backfill or a replay: its
// next records go on from its newest event time whatever the wall clock
// did, and advancing by the pause would make them late. Markers with
// neither measure leave the silence as it was.
func (w *watermarks) silent(src *sourceState, rec *KeyedRecord) (notLive bool) {
	if rec.Timestamp > 0 && src.lastAt > 0 && src.maxEventTime != math.MinInt64 {
		if src.lastAt-src.maxEventTime > w.liveLag {
			return true
		}
		src.idleFor = max(src.idleFor, rec.Timestamp-src.lastAt)
		return false
	}
	if rec.IdleFor <= 0 || rec.SeenAt == 0 || rec.SourceMaxEventTime == math.MinInt64 {
		return false
	}
	if rec.SeenAt-rec.SourceMaxEventTime > w.liveLag {
		return true
	}
	src.idleFor = max(src.idleFor, rec.IdleFor)
	return false
}

// start is where a fresh worker starts evaluating: the smallest firstMax
// over the announced sources, minus the allowed lateness — the earliest
// event time a record can have and still count — or math.MaxInt64 when no
// source has reported an event time. Unlike the watermark's first value,
// it does not depend on the order in which the sources were heard from, so
// two runs over the same input evaluate the same first boundary.
func (w *watermarks) start() int64 {
	st := int64(math.MaxInt64)
	for topic, n := range w.partitions {
		for p := int32(0); p < n; p++ {
			if s := w.sources[sourceID{topic, p}]; s != nil && s.firstMax != math.MinInt64 {
				st = min(st, s.firstMax)
			}
		}
	}
	if st == math.MaxInt64 {
		return st
	}
	return st - w.lateness
}

// allIdle reports whether every announced source partition has been heard
// from and is idle: a pause of every publisher.
func (w *watermarks) allIdle() bool {
	if len(w.partitions) == 0 {
		return false
	}
	for topic, n := range w.partitions {
		for p := int32(0); p < n; p++ {
			s := w.sources[sourceID{topic, p}]
			if s == nil || !s.idle {
				return false
			}
		}
	}
	return true
}

// wakeAll clears every source's idle mark: each holds the watermark at its
// own newest event time again until it sends records or the router marks
// it idle again (the router repeats its idle markers every idle timeout
// while a source stays silent).
func (w *watermarks) wakeAll() {
	for _, s := range w.sources {
		s.idle, s.idleFor = false, 0
	}
}

func (w *watermarks) appendBinary(e *snapcodec.Encoder) {
	topics := make([]string, 0, len(w.partitions))
	for t := range w.partitions {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	e.Count(len(topics))
	for _, t := range topics {
		e.String(t)
		e.U32(uint32(w.partitions[t]))
	}
	ids := w.sortedIDs()
	e.Count(len(ids))
	for _, id := range ids {
		s := w.sources[id]
		e.String(id.Topic)
		e.U32(uint32(id.Partition))
		e.I64(s.lastOffset)
		e.U32(uint32(s.lastPart))
		e.I64(s.maxEventTime)
		e.I64(s.firstMax)
		e.Bool(s.idle)
	}
}

// sortedIDs is every known source, in snapshot order.
func (w *watermarks) sortedIDs() []sourceID {
	ids := make([]sourceID, 0, len(w.sources))
	for id := range w.sources {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b sourceID) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return ids
}

// appendIdleFor writes every source's idleFor, in the order appendBinary
// wrote the sources (snapshot format 5 onward: it follows the rest of the
// worker's snapshot, so that format 4 is format 5 without it).
func (w *watermarks) appendIdleFor(e *snapcodec.Encoder) {
	ids := w.sortedIDs()
	e.Count(len(ids))
	for _, id := range ids {
		e.I64(w.sources[id].idleFor)
	}
}

// appendLastAt writes every source's lastAt, in the order appendBinary
// wrote the sources (snapshot format 6 onward, after the idle durations).
func (w *watermarks) appendLastAt(e *snapcodec.Encoder) {
	ids := w.sortedIDs()
	e.Count(len(ids))
	for _, id := range ids {
		e.I64(w.sources[id].lastAt)
	}
}

// decodeLastAt reads what appendLastAt wrote; the source count must match
// the one decodeBinary read.
func (w *watermarks) decodeLastAt(d *snapcodec.Decoder) {
	ids := w.sortedIDs()
	if n := d.Count(8); d.Err() == nil && n != len(ids) {
		d.Failf("last data timestamps of %d sources, the watermarks have %d", n, len(ids))
		return
	}
	for _, id := range ids {
		if v := d.I64(); d.Err() == nil {
			if v < 0 {
				d.Failf("negative last data timestamp %d of source %s/%d", v, id.Topic, id.Partition)
				return
			}
			w.sources[id].lastAt = v
		}
	}
}

// decodeIdleFor reads what appendIdleFor wrote; the source count must
// match the one decodeBinary read.
func (w *watermarks) decodeIdleFor(d *snapcodec.Decoder) {
	ids := w.sortedIDs()
	if n := d.Count(8); d.Err() == nil && n != len(ids) {
		d.Failf("idle durations of %d sources, the watermarks have %d", n, len(ids))
		return
	}
	for _, id := range ids {
		if v := d.I64(); d.Err() == nil {
			if v < 0 {
				d.Failf("negative idle duration %d of source %s/%d", v, id.Topic, id.Partition)
				return
			}
			w.sources[id].idleFor = v
		}
	}
}

func (w *watermarks) decodeBinary(d *snapcodec.Decoder) {
	n := d.Count(8)
	w.partitions = map[string]int32{}
	for i := 0; i < n && d.Err() == nil; i++ {
		t := d.String()
		w.partitions[t] = int32(d.U32())
	}
	n = d.Count(41)
	w.sources = map[sourceID]*sourceState{}
	for i := 0; i < n && d.Err() == nil; i++ {
		id := sourceID{Topic: d.String(), Partition: int32(d.U32())}
		s := &sourceState{lastOffset: d.I64(), lastPart: int32(d.U32()), maxEventTime: d.I64(), firstMax: d.I64(), idle: d.Bool()}
		w.sources[id] = s
	}
}
