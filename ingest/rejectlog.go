package ingest

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultRejectLogEvery is how often a source partition logs how many
// records of a kind it went on rejecting (see RejectLogEvery).
const DefaultRejectLogEvery = time.Minute

// rejectLog makes the rejections of one source partition loud without
// flooding the log: the first record of each kind (partial ones apart) is
// logged at once with its error, then, while records of that kind keep
// being rejected, one line per interval with their count. It is used only
// from the partition's goroutine.
type rejectLog struct {
	every time.Duration
	kinds map[rejectClass]*rejectCount
}

type rejectClass struct {
	kind    ErrorKind
	partial bool
}

type rejectCount struct {
	since time.Time // start of the current interval
	n     int64     // rejected in it, after the first
}

// note records one rejected record r with err at now.
func (c *Consumer) noteReject(l *rejectLog, r *kgo.Record, kind ErrorKind, partial bool, err error, now time.Time) {
	if l.kinds == nil {
		l.kinds = map[rejectClass]*rejectCount{}
	}
	cl := rejectClass{kind, partial}
	rc := l.kinds[cl]
	if rc == nil {
		l.kinds[cl] = &rejectCount{since: now}
		c.log.Warn("ingest: record rejected (the first of its kind on this partition; later ones are counted per interval)",
			"kind", string(kind), "partial", partial, "topic", r.Topic, "partition", r.Partition, "offset", r.Offset,
			"field", errorField(err), "err", clip(err.Error(), maxErrorHeaderBytes), "dlq_topic", c.cfg.dlqTopic)
		return
	}
	rc.n++
	if d := now.Sub(rc.since); d >= l.every {
		c.log.Warn("ingest: records still rejected",
			"kind", string(kind), "partial", partial, "topic", r.Topic, "partition", r.Partition,
			"count", rc.n, "interval", d.Round(time.Second).String(), "last_offset", r.Offset,
			"last_err", clip(err.Error(), 512))
		rc.since, rc.n = now, 0
	}
}
