// Package kafkago is a fuse.Source on github.com/segmentio/kafka-go, for
// gateways that already use that client. It shows that nothing in package
// fuse depends on franz-go beyond its default source.
//
//	src := kafkago.NewSource([]string{"kafka:9092"}, fuse.DefaultTopic, nil)
//	c, err := fuse.NewClient(fuse.WithKeyring(ring), fuse.WithSource(src))
//
// It reads every partition with one partition reader each (no consumer
// group) from the first offset. kafka-go skips transaction markers and its
// read-committed mode returns aborted records, so this source suits a fuse
// topic written without transactions — which is how fusebox writes it
// (idempotent producer); with transactions, prefer the franz-go source.
package kafkago

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/fusebox-dev/fusebox/fuse"
)

// Source implements fuse.Source with kafka-go.
type Source struct {
	brokers []string
	topic   string
	dialer  *kafka.Dialer

	readers []*kafka.Reader
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	msgs    chan fuse.Record
	errs    chan error
	closed  bool
}

// NewSource returns a source for topic on brokers. dialer carries TLS and
// SASL settings; nil uses kafka.DefaultDialer.
func NewSource(brokers []string, topic string, dialer *kafka.Dialer) *Source {
	if dialer == nil {
		dialer = kafka.DefaultDialer
	}
	return &Source{brokers: brokers, topic: topic, dialer: dialer}
}

// Open implements fuse.Source: it looks up the partitions, reads each one's
// first and last offsets from its leader, and starts a reader per
// partition at the first offset. A topic that does not exist is an error
// (the client retries).
func (s *Source) Open(ctx context.Context) (map[int32]int64, error) {
	s.stop()
	if len(s.brokers) == 0 {
		return nil, errors.New("kafkago: no brokers")
	}
	var parts []kafka.Partition
	var err error
	for _, b := range s.brokers {
		if parts, err = s.dialer.LookupPartitions(ctx, "tcp", b, s.topic); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("kafkago: partitions of %s: %w", s.topic, err)
	}
	pending := map[int32]int64{}
	for _, p := range parts {
		first, last, err := s.offsets(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("kafkago: offsets of %s[%d]: %w", s.topic, p.ID, err)
		}
		if last > first {
			pending[int32(p.ID)] = last
		}
	}
	rctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.msgs = make(chan fuse.Record, 1024)
	s.errs = make(chan error, 16)
	s.closed = false
	for _, p := range parts {
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers:   s.brokers,
			Topic:     s.topic,
			Partition: p.ID,
			Dialer:    s.dialer,
			MinBytes:  1,
			MaxBytes:  10 << 20,
			MaxWait:   250 * time.Millisecond,
		})
		if err := r.SetOffset(kafka.FirstOffset); err != nil {
			r.Close()
			s.stop()
			return nil, fmt.Errorf("kafkago: reader for %s[%d]: %w", s.topic, p.ID, err)
		}
		s.readers = append(s.readers, r)
		s.wg.Add(1)
		go s.read(rctx, r)
	}
	return pending, nil
}

func (s *Source) offsets(ctx context.Context, p kafka.Partition) (first, last int64, err error) {
	addr := fmt.Sprintf("%s:%d", p.Leader.Host, p.Leader.Port)
	conn, err := s.dialer.DialLeader(ctx, "tcp", addr, s.topic, p.ID)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	return conn.ReadOffsets()
}

func (s *Source) read(ctx context.Context, r *kafka.Reader) {
	defer s.wg.Done()
	for {
		m, err := r.FetchMessage(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			select {
			case s.errs <- err:
			case <-ctx.Done():
				return
			}
			continue
		}
		select {
		case s.msgs <- fuse.Record{Partition: int32(m.Partition), Offset: m.Offset, Key: m.Key, Value: m.Value}:
		case <-ctx.Done():
			return
		}
	}
}

// Poll implements fuse.Source: it waits for one record, then takes what
// else is buffered (up to 1000).
func (s *Source) Poll(ctx context.Context) ([]fuse.Record, error) {
	if s.closed || s.msgs == nil {
		return nil, fuse.ErrSourceClosed
	}
	var out []fuse.Record
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case err := <-s.errs:
		return nil, err
	case r := <-s.msgs:
		out = append(out, r)
	}
	for len(out) < 1000 {
		select {
		case r := <-s.msgs:
			out = append(out, r)
		default:
			return out, nil
		}
	}
	return out, nil
}

// stop ends the readers of a previous Open.
func (s *Source) stop() {
	if s.cancel != nil {
		s.cancel()
	}
	for _, r := range s.readers {
		r.Close()
	}
	s.wg.Wait()
	s.readers, s.cancel = nil, nil
}

// Close implements fuse.Source.
func (s *Source) Close() error {
	s.stop()
	s.closed = true
	return nil
}
