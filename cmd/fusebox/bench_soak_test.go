package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/cmd/fusebox/internal/soak"
)

// envPlantLeak makes the test binary, run as fusebox (envAsMain), leak
// 1 MiB every 250 ms: the fault TestSoakCatchesAPlantedLeak must find.
const envPlantLeak = "FUSEBOX_TEST_PLANT_LEAK"

var (
	leakMu sync.Mutex
	leaked [][]byte
)

// plantLeak retains 1 MiB, written so that it is resident, every 250 ms.
func plantLeak() {
	for range time.Tick(250 * time.Millisecond) {
		b := make([]byte, 1<<20)
		for i := range b {
			b[i] = byte(i)
		}
		leakMu.Lock()
		leaked = append(leaked, b)
		leakMu.Unlock()
	}
}

// soakTestYAML has windows of seconds, so that the state is full after a
// warm-up of seconds.
const soakTestYAML = `version: soak-test
kafka: {brokers: [{{brokers}}], group: soak-test}
http: {listen: "{{listen}}"}
time: {allowed_lateness: 2s, idle_source_timeout: 2s, checkpoint_every: 1s}
topics: {keyed_partitions: 2}
slos:
  - name: latency
    tail: {budget: 100000, window: 10s, every: 2s}
  - name: availability
    burnrate: {target: 0.999, every: 2s, page: [{long: 10s, short: 2s, factor: 14.4}], ticket: []}
`

// TestSoakCatchesAPlantedLeak runs two short soaks of `fusebox run` (this
// test binary as fusebox) side by side on live traffic: one clean, which
// must report nothing growing and exit 0 after SIGTERM, and one with a
// leak planted in the process (4 MiB/s retained), whose RSS must be
// reported growing, and nothing but its memory (the heap goal, a step
// function that doubles at each GC, may look like plateaus over 45 s).
func TestSoakCatchesAPlantedLeak(t *testing.T) {
	for _, c := range []struct {
		name      string
		env       []string
		want, may []string
	}{{"clean", nil, nil, nil}, {"leak", []string{envPlantLeak + "=1"}, []string{"rss"}, []string{"heap_goal"}}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := soak.DefaultOptions()
			o.Command = []string{os.Args[0]}
			o.Env = append([]string{envAsMain + "=1"}, c.env...)
			o.ConfigYAML = soakTestYAML
			o.LogPath = t.TempDir() + "/fusebox.log"
			o.Duration, o.Every, o.WarmUp, o.Rate = 45*time.Second, 1500*time.Millisecond, 12*time.Second, 50
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			res, err := soak.Run(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			var table strings.Builder
			res.WriteTable(&table)
			t.Logf("%s soak:\n%s", c.name, table.String())
			if res.Exit != nil {
				t.Errorf("fusebox's exit after SIGTERM: %v", res.Exit)
			}
			if res.Calls == 0 || res.Samples[len(res.Samples)-1].Verdicts == 0 {
				t.Errorf("%d calls produced, %v verdicts: the soak judged nothing", res.Calls, res.Samples[len(res.Samples)-1].Verdicts)
			}
			grew := res.Grew()
			for _, s := range c.want {
				if !slices.Contains(grew, s) {
					t.Errorf("%s not reported growing (grew: %v)", s, grew)
				}
			}
			for _, s := range grew {
				if !slices.Contains(c.want, s) && !slices.Contains(c.may, s) {
					t.Errorf("%s reported growing in the %s run", s, c.name)
				}
			}
		})
	}
}
