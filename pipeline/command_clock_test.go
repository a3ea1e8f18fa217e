package pipeline_test

import (
	"context"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/enginebench"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/fusebox-dev/fusebox/schemas"
)

func TestClampCommandTimes(t *testing.T) {
	now := time.Unix(1000, 0)
	ttl := 15 * time.Minute
	cmds := []schemas.FuseCommand{
		{IssuedAtUnixNano: now.Add(-time.Hour).UnixNano(), ExpiresAtUnixNano: now.Add(-time.Hour + ttl).UnixNano()}, // a backlog: kept
		{IssuedAtUnixNano: now.UnixNano(), ExpiresAtUnixNano: now.Add(ttl).UnixNano()},                              // at the clock: kept
		{IssuedAtUnixNano: now.Add(3 * time.Hour).UnixNano(), ExpiresAtUnixNano: now.Add(3*time.Hour + ttl).UnixNano()},
	}
	want := []schemas.FuseCommand{cmds[0], cmds[1], {IssuedAtUnixNano: now.UnixNano(), ExpiresAtUnixNano: now.Add(ttl).UnixNano()}}
	pipeline.ClampCommandTimes(cmds, now)
	for i := range cmds {
		if cmds[i].IssuedAtUnixNano != want[i].IssuedAtUnixNano || cmds[i].ExpiresAtUnixNano != want[i].ExpiresAtUnixNano {
			t.Errorf("command %d: issued %d expires %d, want %d %d", i, cmds[i].IssuedAtUnixNano, cmds[i].ExpiresAtUnixNano, want[i].IssuedAtUnixNano, want[i].ExpiresAtUnixNano)
		}
	}
}

// TestCommandClockHoldsCommandsAtTheWallClock runs the cluster traffic with
// the pipeline's wall clock set 12 minutes into its event time — event time
// runs ahead of the clock from there, as with `gen --speedup` from now —
// and checks every fuse command on the topic against the uninterrupted run
// (whose event time is all in the past): a command issued before the clock
// is unchanged; a later one is issued at the clock and expires one
// lifetime after it; nothing else (target, version, action, state,
// reasons) differs; and verdicts are not touched.
func TestCommandClockHoldsCommandsAtTheWallClock(t *testing.T) {
	t.Parallel()
	want := clusterReference(t)
	k := startTestCluster(t)
	publishClusterTraffic(t, k, 0, 0)
	col := startClusterCollector(t, k)
	clock := enginebench.Start.Add(12 * time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	p, err := pipeline.New(ctx, pipeline.Options{Config: parseClusterConfig(t, k.Brokers), Logger: testLogger(t), KgoOpts: clusterGroupOpts(),
		Clock: func() time.Time { return clock }})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("pipeline: %v", err)
		}
	}()
	if !clusterWait(120*time.Second, func() bool {
		n, _ := col.missing(want, 1<<62)
		nc, _ := col.missingCommands(want)
		return n == 0 && nc == 0
	}) {
		n, _ := col.missing(want, 1<<62)
		nc, ex := col.missingCommands(want)
		t.Fatalf("%d verdicts and %d commands (e.g. %s) of the reference missing", n, nc, ex)
	}
	time.Sleep(time.Second)
	got := readClusterOutput(t, k)
	if len(got.verdicts) != len(want.verdicts) {
		t.Errorf("%d verdicts, want %d", len(got.verdicts), len(want.verdicts))
	}
	for id, v := range want.verdicts {
		if string(got.verdicts[id]) != string(v) {
			t.Errorf("verdict %s changed by the command clock", id)
			break
		}
	}
	c := clock.UnixNano()
	moved, kept := 0, 0
	for key, wb := range want.commands {
		gb, ok := got.commands[key]
		if !ok {
			t.Fatalf("command %s missing", key)
		}
		w, err1 := schemas.DecodeFuseCommand(wb)
		g, err2 := schemas.DecodeFuseCommand(gb)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		exp := w
		if w.IssuedAtUnixNano > c {
			exp.IssuedAtUnixNano, exp.ExpiresAtUnixNano = c, c+(w.ExpiresAtUnixNano-w.IssuedAtUnixNano)
			moved++
		} else {
			kept++
		}
		if string(mustCanonical(t, g)) != string(mustCanonical(t, exp)) {
			t.Errorf("command %s:\n got  issued %d expires %d\n want issued %d expires %d (reference issued %d)", key,
				g.IssuedAtUnixNano, g.ExpiresAtUnixNano, exp.IssuedAtUnixNano, exp.ExpiresAtUnixNano, w.IssuedAtUnixNano)
		}
		if g.ExpiresAtUnixNano > c+int64(time.Hour) {
			t.Errorf("command %s expires %v after the wall clock", key, time.Duration(g.ExpiresAtUnixNano-c))
		}
	}
	if moved == 0 || kept == 0 {
		t.Fatalf("%d commands held at the clock, %d before it: the clock does not split the run", moved, kept)
	}
	t.Logf("%d commands issued before the clock kept their times, %d later ones held at it", kept, moved)
}

func mustCanonical(t *testing.T, c schemas.FuseCommand) []byte {
	t.Helper()
	b, err := c.CanonicalBytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
