package testharness

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestApacheClusterKillStopRestart starts a 3-node cluster, writes to a
// topic replicated 3 times with min.insync.replicas 2, kills its leader
// (kill -9), writes on while it is down, restarts it, then stops (SIGTERM)
// and restarts the new leader; every write is acknowledged by all
// in-sync replicas and every record is read back once, in order. It checks
// what the pipeline's cluster test relies on: LeaderOf names the node that
// leads, a killed leader's partition gets another leader, a stopped one
// hands its leadership over, Restart brings the same node back with its
// data, WaitInSync sees it caught up.
func TestApacheClusterKillStopRestart(t *testing.T) {
	c := StartApacheCluster(t, 3)
	if ids := c.NodeIDs(); len(ids) != 3 || len(c.Brokers) != 3 {
		t.Fatalf("nodes %v, brokers %v", ids, c.Brokers)
	}
	minISR := "2"
	c.CreateTopic(t, "t", 1, 3, map[string]*string{"min.insync.replicas": &minISR})
	cl := c.Client(t, append(ClusterClientOpts(), kgo.DefaultProduceTopic("t"), kgo.RequiredAcks(kgo.AllISRAcks()))...)
	n := 0
	produce := func(what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for i := 0; i < 10; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(n))}).FirstErr(); err != nil {
				t.Fatalf("%s: produce %d: %v", what, n, err)
			}
			n++
		}
	}
	produce("all up")
	leader := c.LeaderOf(t, "t", 0)
	if leader < 1 || leader > 3 {
		t.Fatalf("leader of t[0]: %d", leader)
	}
	c.Kill(t, leader)
	if c.Running(leader) {
		t.Fatalf("node %d still running after Kill", leader)
	}
	took := Eventually(t, 60*time.Second, "a new leader of t[0]", func() bool {
		l := c.LeaderOf(t, "t", 0)
		return l > 0 && l != leader
	})
	t.Logf("kill -9 of leader %d: new leader %d after %v", leader, c.LeaderOf(t, "t", 0), took.Round(10*time.Millisecond))
	produce("leader killed")
	t.Logf("node %d restarted in %v", leader, c.Restart(t, leader).Round(10*time.Millisecond))
	c.WaitInSync(t, 60*time.Second, "t")
	// A controlled shutdown hands the leadership over before the node
	// exits: the metadata names another leader as soon as Stop returns.
	id := c.LeaderOf(t, "t", 0)
	c.Stop(t, id)
	if l := c.LeaderOf(t, "t", 0); l == id || l < 0 {
		t.Errorf("leader %d stopped: t[0] led by %d", id, l)
	}
	produce("leader stopped")
	c.Restart(t, id)
	c.WaitInSync(t, 60*time.Second, "t")
	produce("all back")
	got := c.ReadToEnd(t, "t")
	if len(got) != n {
		t.Fatalf("read %d records, wrote %d", len(got), n)
	}
	for i, r := range got {
		if string(r.Value) != fmt.Sprint(i) {
			t.Fatalf("record %d is %q", i, r.Value)
		}
	}
}
