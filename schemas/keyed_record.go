package schemas

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// A keyed record is one record of the keyed topic between the router
// (stage 1) and the engine's partition workers (stage 2): its value is a
// keyed batch (AppendKeyedBatch; empty for heartbeats and idle markers)
// and its headers say where it came from and how far its source partition
// has got. The router writes the headers with AppendKeyedHeaders, the
// engine reads them with ParseKeyedHeaders. Values are text so that an
// operator can read them with any Kafka tool.
const (
	// HeaderSource is "topic/partition/offset/part": the source record and
	// which of its keyed records this is (a large source record may be
	// split into several parts for one keyed partition). Required.
	HeaderSource = "fb.src"
	// HeaderSourceMax is the newest event time (Unix ns) the router had
	// seen on the source partition; absent before any.
	HeaderSourceMax = "fb.wm"
	// HeaderSourceTopics is "topic:partitions,..." for every source topic.
	HeaderSourceTopics = "fb.topics"
	// HeaderIdle is "1" on an idle marker.
	HeaderIdle = "fb.idle"
	// HeaderIdleFor is, on an idle marker, how long (wall time, ns) the
	// source partition had brought no valid event when the router wrote
	// it; absent on markers of a source without any event time and on
	// markers written before the header existed (read as 0). The keyed
	// stage advances the watermark of a partition whose sources are all
	// idle by it (see the engine's watermarks.current).
	HeaderIdleFor = "fb.idlefor"
	// HeaderSeenAt is, on an idle marker stamped with HeaderIdleFor, the
	// router's wall clock (Unix ns) when the source's last valid event
	// came: with HeaderSourceMax it tells a live source (its newest event
	// time close to the wall clock) from a backfill, whose pause says
	// nothing of its next event times.
	HeaderSeenAt = "fb.seen"
	// HeaderDeployment names the deployment (its kafka.group) whose router
	// wrote the record. A keyed stage skips records of another deployment;
	// records without it (written before the header existed) are taken as
	// its own.
	HeaderDeployment = "fb.dep"
)

// Header is one record header, as a Kafka record carries it (the same
// fields as the Kafka clients' header types, which convert to and from it).
type Header struct {
	Key   string
	Value []byte
}

// SourceRef names the source record a keyed record came from.
type SourceRef struct {
	Topic     string
	Partition int32
	Offset    int64
	// Part numbers the keyed records one source record sent to one keyed
	// partition when it had to be split.
	Part int32
}

// KeyedHeaders is what the headers of a keyed record say.
type KeyedHeaders struct {
	Source SourceRef
	// SourceMaxEventTime is the newest event time (Unix ns) the router had
	// seen on the source partition, math.MinInt64 when none.
	SourceMaxEventTime int64
	// SourceTopics is "topic:n,topic:n", sorted by topic: the partition
	// count of every source topic.
	SourceTopics string
	// Idle marks an idle marker: the source partition had no records for
	// the router's idle timeout.
	Idle bool
	// IdleForNanos is, on an idle marker, how long (wall time, ns) the
	// source had been silent when it was written; 0 when not known.
	IdleForNanos int64
	// SeenAtUnixNano is, on an idle marker with IdleForNanos, the router's
	// wall clock when the source's last valid event came; 0 when not known.
	SeenAtUnixNano int64
	// Deployment is the HeaderDeployment of the router that wrote the
	// record; "" when absent.
	Deployment string
}

// FormatSource renders the HeaderSource value.
func FormatSource(s SourceRef) string {
	return s.Topic + "/" + strconv.FormatInt(int64(s.Partition), 10) + "/" + strconv.FormatInt(s.Offset, 10) + "/" + strconv.FormatInt(int64(s.Part), 10)
}

// AppendKeyedHeaders appends the headers of a keyed record saying h to
// dst: HeaderSource and HeaderSourceTopics always, HeaderSourceMax when
// known, HeaderIdle on idle markers (with HeaderIdleFor when positive,
// and then HeaderSeenAt when known), HeaderDeployment when set.
func AppendKeyedHeaders(dst []Header, h KeyedHeaders) []Header {
	dst = append(dst,
		Header{Key: HeaderSource, Value: []byte(FormatSource(h.Source))},
		Header{Key: HeaderSourceTopics, Value: []byte(h.SourceTopics)})
	if h.SourceMaxEventTime != math.MinInt64 {
		dst = append(dst, Header{Key: HeaderSourceMax, Value: strconv.AppendInt(nil, h.SourceMaxEventTime, 10)})
	}
	if h.Idle {
		dst = append(dst, Header{Key: HeaderIdle, Value: []byte("1")})
		if h.IdleForNanos > 0 {
			dst = append(dst, Header{Key: HeaderIdleFor, Value: strconv.AppendInt(nil, h.IdleForNanos, 10)})
			if h.SeenAtUnixNano != 0 {
				dst = append(dst, Header{Key: HeaderSeenAt, Value: strconv.AppendInt(nil, h.SeenAtUnixNano, 10)})
			}
		}
	}
	if h.Deployment != "" {
		dst = append(dst, Header{Key: HeaderDeployment, Value: []byte(h.Deployment)})
	}
	return dst
}

// ParseKeyedHeaders reads the keyed-record headers among hs (others are
// ignored). It fails when HeaderSource is missing or a header's value is
// malformed.
func ParseKeyedHeaders(hs []Header) (KeyedHeaders, error) {
	k := KeyedHeaders{SourceMaxEventTime: math.MinInt64}
	haveSource := false
	for _, h := range hs {
		switch h.Key {
		case HeaderSource:
			parts := strings.Split(string(h.Value), "/")
			if len(parts) != 4 {
				return k, errors.New(HeaderSource + " is not topic/partition/offset/part")
			}
			p, err1 := strconv.ParseInt(parts[1], 10, 32)
			o, err2 := strconv.ParseInt(parts[2], 10, 64)
			s, err3 := strconv.ParseInt(parts[3], 10, 32)
			if err := errors.Join(err1, err2, err3); err != nil {
				return k, err
			}
			k.Source = SourceRef{Topic: parts[0], Partition: int32(p), Offset: o, Part: int32(s)}
			haveSource = true
		case HeaderSourceMax:
			v, err := strconv.ParseInt(string(h.Value), 10, 64)
			if err != nil {
				return k, err
			}
			k.SourceMaxEventTime = v
		case HeaderSourceTopics:
			k.SourceTopics = string(h.Value)
		case HeaderIdle:
			k.Idle = string(h.Value) == "1"
		case HeaderIdleFor:
			v, err := strconv.ParseInt(string(h.Value), 10, 64)
			if err != nil || v < 0 {
				return k, errors.New(HeaderIdleFor + " is not a non-negative number of nanoseconds: " + strconv.Quote(string(h.Value)))
			}
			k.IdleForNanos = v
		case HeaderSeenAt:
			v, err := strconv.ParseInt(string(h.Value), 10, 64)
			if err != nil {
				return k, errors.New(HeaderSeenAt + " is not a Unix time in nanoseconds: " + strconv.Quote(string(h.Value)))
			}
			k.SeenAtUnixNano = v
		case HeaderDeployment:
			k.Deployment = string(h.Value)
		}
	}
	if !haveSource {
		return k, errors.New("no " + HeaderSource + " header")
	}
	return k, nil
}
