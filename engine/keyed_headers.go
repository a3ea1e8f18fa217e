package engine

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Headers of the keyed topic's records. The router writes them; the keyed
// stage reads them. Values are text so that an operator can read them with
// any Kafka tool.
const (
	// HeaderSource is "topic/partition/offset/part": the source record and
	// which of its keyed records this is (a large source record may be
	// split into several parts for one keyed partition).
	HeaderSource = "fb.src"
	// HeaderSourceMax is the newest event time (Unix ns) the router had
	// seen on the source partition; absent before any.
	HeaderSourceMax = "fb.wm"
	// HeaderSourceTopics is "topic:partitions,..." for every source topic.
	HeaderSourceTopics = "fb.topics"
	// HeaderIdle is "1" on an idle marker.
	HeaderIdle = "fb.idle"
	// HeaderDeployment names the deployment (its kafka.group) whose router
	// wrote the record. A keyed stage skips records of another deployment;
	// records without it (written before the header existed) are taken as
	// its own.
	HeaderDeployment = "fb.dep"
)

// ErrBadKeyedRecord wraps every problem decoding a keyed record.
var ErrBadKeyedRecord = errors.New("engine: bad keyed record")

// FormatSource renders the HeaderSource value.
func FormatSource(topic string, partition int32, offset int64, part int32) string {
	return topic + "/" + strconv.FormatInt(int64(partition), 10) + "/" + strconv.FormatInt(offset, 10) + "/" + strconv.FormatInt(int64(part), 10)
}

// DecodeKeyedRecord decodes a keyed-topic record into rec, reusing rec's
// span and correction slices.
func DecodeKeyedRecord(r *kgo.Record, rec *KeyedRecord) error {
	*rec = KeyedRecord{Offset: r.Offset, SourceMaxEventTime: math.MinInt64, Spans: rec.Spans[:0], Corrections: rec.Corrections[:0]}
	haveSource := false
	for _, h := range r.Headers {
		switch h.Key {
		case HeaderSource:
			parts := strings.Split(string(h.Value), "/")
			if len(parts) != 4 {
				return errors.Join(ErrBadKeyedRecord, errors.New(HeaderSource+" is not topic/partition/offset/part"))
			}
			p, err1 := strconv.ParseInt(parts[1], 10, 32)
			o, err2 := strconv.ParseInt(parts[2], 10, 64)
			s, err3 := strconv.ParseInt(parts[3], 10, 32)
			if err := errors.Join(err1, err2, err3); err != nil {
				return errors.Join(ErrBadKeyedRecord, err)
			}
			rec.Source = SourceRef{Topic: parts[0], Partition: int32(p), Offset: o, Part: int32(s)}
			haveSource = true
		case HeaderSourceMax:
			v, err := strconv.ParseInt(string(h.Value), 10, 64)
			if err != nil {
				return errors.Join(ErrBadKeyedRecord, err)
			}
			rec.SourceMaxEventTime = v
		case HeaderSourceTopics:
			rec.SourceTopics = string(h.Value)
		case HeaderIdle:
			rec.Idle = string(h.Value) == "1"
		case HeaderDeployment:
			rec.Deployment = string(h.Value)
		}
	}
	if !haveSource {
		return errors.Join(ErrBadKeyedRecord, errors.New("no "+HeaderSource+" header"))
	}
	if rec.Idle || len(r.Value) == 0 {
		return nil
	}
	var err error
	rec.Spans, rec.Corrections, err = schemas.DecodeKeyedBatch(r.Value, rec.Spans, rec.Corrections)
	if err != nil {
		return errors.Join(ErrBadKeyedRecord, err)
	}
	return nil
}
