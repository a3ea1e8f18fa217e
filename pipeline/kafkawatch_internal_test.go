package pipeline

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/broker"
)

// syncBuffer is a goroutine-safe log target.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWatchReportsALostKafkaBroker: on a healthy kfake broker the watch
// has no reason; once the broker is gone, a poll gives /readyz a reason
// naming it and the partitions it led (each once; a topic not created yet
// is left out) and logs the outage's start (WARN "kafka outage:"); the end ("kafka outage over", with how long it
// lasted) is logged when a poll finds every leader again. (The 3-broker
// case, a killed leader named with its partitions, is
// TestApacheClusterLosesBrokers's.)
func TestWatchReportsALostKafkaBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := broker.Start(ctx, broker.Config{Listen: "127.0.0.1:0", Partitions: 2,
		Topics: []broker.TopicSpec{{Name: "own", Partitions: 2}}, LogLevel: "none"})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(b.ClientOpts(), kgo.RetryTimeout(time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var logs syncBuffer
	w := NewKafkaWatch(cl, []string{"own", "own", "not-created"}, 1, slog.New(slog.NewJSONHandler(&logs, nil)))

	w.poll(ctx)
	if r := w.Reasons(); r != nil {
		t.Fatalf("healthy broker: %v", r)
	}
	// The end of an outage, as a poll that finds every leader ends it.
	w.mu.Lock()
	w.reasons, w.key, w.since = []string{"broker 1 unreachable"}, "broker 1:own[0]", time.Now().Add(-3*time.Second)
	w.mu.Unlock()
	w.poll(ctx)
	if r := w.Reasons(); r != nil || !strings.Contains(logs.String(), `"msg":"kafka outage over`) || !strings.Contains(logs.String(), `"lasted":"3`) {
		t.Fatalf("after a healthy poll: reasons %v, log:\n%s", r, logs.String())
	}

	b.Close()
	w.poll(ctx)
	r := w.Reasons()
	// The client's metadata is cached for a few seconds: the probe of the
	// leader is what finds the broker gone.
	if len(r) != 1 || !strings.HasPrefix(r[0], "kafka outage for 0s: broker 0 (") || !strings.Contains(r[0], ") unreachable, leader of own[0], own[1]: ") {
		t.Fatalf("broker gone: %v", r)
	}
	if !strings.Contains(logs.String(), `"msg":"kafka outage: `) {
		t.Errorf("no outage start in the log:\n%s", logs.String())
	}
	t.Logf("reason: %s", r[0])
}
