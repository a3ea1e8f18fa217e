package fuse

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KgoSource reads the fuse topic with franz-go, without a consumer group
// (every gateway reads every partition from the start). It reads committed
// records only and keeps transaction markers, so a topic written
// transactionally still completes the catch-up.
type KgoSource struct {
	topic string
	opts  []kgo.Opt
	cl    *kgo.Client
}

// NewKgoSource returns a source for topic. opts are franz-go options: at
// least kgo.SeedBrokers, plus TLS, SASL, client id as needed. The source
// adds ConsumeTopics, ConsumeResetOffset(start), ReadCommitted and
// KeepControlRecords; do not pass a consumer group.
func NewKgoSource(topic string, opts ...kgo.Opt) *KgoSource {
	return &KgoSource{topic: topic, opts: opts}
}

// Open implements Source. The end offsets are the last stable offsets.
func (s *KgoSource) Open(ctx context.Context) (map[int32]int64, error) {
	if s.cl != nil {
		s.cl.Close()
		s.cl = nil
	}
	opts := append(append([]kgo.Opt(nil), s.opts...),
		kgo.ConsumeTopics(s.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("fuse: kgo client: %w", err)
	}
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, s.topic)
	if err == nil {
		err = offsetsErr(starts)
	}
	var ends kadm.ListedOffsets
	if err == nil {
		ends, err = adm.ListCommittedOffsets(ctx, s.topic)
		if err == nil {
			err = offsetsErr(ends)
		}
	}
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("fuse: list offsets of %s: %w", s.topic, err)
	}
	pending := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Partition < 0 || o.Err != nil {
			return // the topic does not exist yet
		}
		st, _ := starts.Lookup(o.Topic, o.Partition)
		if o.Offset > st.Offset {
			pending[o.Partition] = o.Offset
		}
	})
	s.cl = cl
	return pending, nil
}

// offsetsErr returns the first partition error other than "unknown topic".
func offsetsErr(l kadm.ListedOffsets) error {
	var first error
	l.Each(func(o kadm.ListedOffset) {
		if o.Err != nil && !errors.Is(o.Err, kerr.UnknownTopicOrPartition) && first == nil {
			first = fmt.Errorf("partition %d: %w", o.Partition, o.Err)
		}
	})
	return first
}

// Poll implements Source.
func (s *KgoSource) Poll(ctx context.Context) ([]Record, error) {
	if s.cl == nil {
		return nil, ErrSourceClosed
	}
	fs := s.cl.PollFetches(ctx)
	if fs.IsClientClosed() {
		return nil, ErrSourceClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []Record
	fs.EachRecord(func(r *kgo.Record) {
		out = append(out, Record{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Control: r.Attrs.IsControl()})
	})
	var ferr error
	fs.EachError(func(topic string, p int32, err error) {
		if ferr == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			ferr = fmt.Errorf("fuse: fetch %s[%d]: %w", topic, p, err)
		}
	})
	if len(out) == 0 && ferr != nil {
		return nil, ferr
	}
	return out, nil
}

// Close implements Source.
func (s *KgoSource) Close() error {
	if s.cl != nil {
		s.cl.Close()
		s.cl = nil
	}
	return nil
}
