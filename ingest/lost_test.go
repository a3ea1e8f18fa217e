package ingest

import (
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPartitionsLost: the broker answers a heartbeat with UNKNOWN_MEMBER_ID
// (the session is gone, as after a long GC pause). The member's handlers
// are closed as lost, nothing is committed, a late ack of a batch of the
// lost session is ignored, and after rejoining the unacknowledged records
// are delivered again.
func TestPartitionsLost(t *testing.T) {
	k := testharness.StartKafka(t)
	machineryTopics(t, k, 1).publish(t, okMsgs(1, 5, "l")...)

	s := &sink{ack: func(*Batch) bool { return false }}
	start(t, k, "g-lost", append(machineryOpts(s), ClientOpts(kgo.HeartbeatInterval(100*time.Millisecond)))...)
	testharness.Eventually(t, 30*time.Second, "first delivery", func() bool { return s.count() == 5 })
	held := s.heldBatches()

	k.Cluster.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil, true
	})
	testharness.Eventually(t, 30*time.Second, "handler closed as lost", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return strings.Contains(strings.Join(s.closes, " "), ":lost")
	})
	for _, b := range held {
		b.Ack() // too late: the session that fetched it is gone
	}
	testharness.Eventually(t, 30*time.Second, "redelivery after rejoining", func() bool { return s.count() == 10 })
	recs := s.snapshot()
	for i := 0; i < 5; i++ {
		if recs[5+i].Offset != recs[i].Offset {
			t.Fatalf("redelivered offset %d where %d was first delivered", recs[5+i].Offset, recs[i].Offset)
		}
	}
	// Absence: three commit intervals for a wrong commit to show.
	time.Sleep(300 * time.Millisecond)
	if c := committed(t, k, "g-lost", "in"); len(c) != 0 {
		t.Fatalf("committed %v from acks of a lost session", c)
	}
}
