package ingest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
)

// TestRebalance runs two members of one group over six partitions: B joins
// while A consumes (cooperative-sticky moves partitions from A to B), then
// A leaves and B takes everything. Handlers ack every batch as it comes, so
// the sync commit on revoke must hand each partition over exactly where A
// stopped: nothing lost, and no acknowledged record delivered twice.
func TestRebalance(t *testing.T) {
	k := testharness.StartKafka(t)
	pub := machineryTopics(t, k, 6)
	const per = 50 // records per partition per round
	pub.publish(t, okMsgs(6, per, "a")...)

	sa, sb := &sink{}, &sink{}
	ra := start(t, k, "g-rb", machineryOpts(sa)...)
	testharness.Eventually(t, 30*time.Second, "A consuming", func() bool { return sa.count() > 0 })
	rb := start(t, k, "g-rb", machineryOpts(sb)...)
	testharness.Eventually(t, 30*time.Second, "B assigned partitions", func() bool { return rb.c.Stats().Partitions > 0 })
	pub.publish(t, okMsgs(6, per, "b")...)
	testharness.Eventually(t, 30*time.Second, "both members received their share", func() bool { return sa.count()+sb.count() >= 12*per })

	if err := ra.shutdown(t); err != nil {
		t.Fatalf("A: Run: %v", err)
	}
	pub.publish(t, okMsgs(6, per, "c")...)
	testharness.Eventually(t, 30*time.Second, "B owns all six partitions", func() bool { return rb.c.Stats().Partitions == 6 })

	total := 18 * per
	seen := map[string]int{}
	count := func() int {
		clear(seen)
		for _, s := range []*sink{sa, sb} {
			for _, r := range s.snapshot() {
				seen[fmt.Sprintf("%d/%d", r.Partition, r.Offset)]++
			}
		}
		return len(seen)
	}
	testharness.Eventually(t, 30*time.Second, "every record delivered", func() bool { return count() == total })
	time.Sleep(300 * time.Millisecond) // let a wrong redelivery show
	count()
	var dups []string
	for k, n := range seen {
		if n > 1 {
			dups = append(dups, fmt.Sprintf("%s x%d", k, n))
		}
	}
	if len(dups) > 0 {
		t.Fatalf("%d acknowledged records delivered more than once: %v", len(dups), dups)
	}
	for p := 0; p < 6; p++ {
		for o := 0; o < 3*per; o++ {
			if seen[fmt.Sprintf("%d/%d", p, o)] == 0 {
				t.Fatalf("record %d/%d lost", p, o)
			}
		}
	}
	sa.mu.Lock()
	closes := strings.Join(sa.closes, " ")
	sa.mu.Unlock()
	if !strings.Contains(closes, ":revoked") || !strings.Contains(closes, ":shutdown") {
		t.Errorf("A's handlers were closed as %q; want some revoked (B joined) and some at shutdown", closes)
	}
	t.Logf("A received %d, B %d records; A's closes: %s", sa.count(), sb.count(), closes)
}
