package loop

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks"
)

// commandLog records the commands the loop's gateway applies (its fuse
// client's OnChange) and when, as offsets from start.
type commandLog struct {
	start  time.Time
	notify func(at time.Duration, c schemas.FuseCommand) // Options.OnCommand; nil: none

	mu  sync.Mutex
	cmd []schemas.FuseCommand
	at  []time.Duration
}

// applied is the fuse client's OnChange.
func (l *commandLog) applied(_, c schemas.FuseCommand) {
	at := time.Since(l.start)
	l.mu.Lock()
	l.cmd, l.at = append(l.cmd, c), append(l.at, at)
	l.mu.Unlock()
	if l.notify != nil {
		l.notify(at, c)
	}
}

// all returns copies of the commands applied so far and their times.
func (l *commandLog) all() ([]schemas.FuseCommand, []time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]schemas.FuseCommand(nil), l.cmd...), append([]time.Duration(nil), l.at...)
}

// firsts maps each commanded target to the version of its first command
// that is not a close.
func (l *commandLog) firsts() map[string]uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := map[string]uint64{}
	for _, c := range l.cmd {
		if _, ok := m[c.Target.String()]; !ok && c.State != schemas.StateClosed {
			m[c.Target.String()] = c.Version
		}
	}
	return m
}

// effectLog holds fusebox's effect verdicts, read back from the verdict
// topic.
type effectLog struct {
	mu sync.Mutex
	v  []schemas.Verdict
}

// read polls vc until ctx ends, keeping the effect verdicts.
func (l *effectLog) read(ctx context.Context, vc *kgo.Client) {
	for ctx.Err() == nil {
		f := vc.PollFetches(ctx)
		f.EachRecord(func(r *kgo.Record) {
			v, err := sinks.UnmarshalVerdictJSON(r.Value)
			if err != nil || v.Processor != "effect" {
				return
			}
			l.mu.Lock()
			l.v = append(l.v, v)
			l.mu.Unlock()
		})
	}
}

// of is the effect verdict on target's command version, nil when none
// came yet.
func (l *effectLog) of(target string, version uint64) *schemas.Verdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.v {
		if v := &l.v[i]; v.Key.String() == target {
			if n, ok := v.Detail("command_version"); ok && uint64(n) == version {
				c := *v
				return &c
			}
		}
	}
	return nil
}

// all returns a copy of the effect verdicts read so far, in order.
func (l *effectLog) all() []schemas.Verdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []schemas.Verdict
	return append(out, l.v...)
}

// await waits, checking every 100 ms, until every command firsts returns
// has its effect verdict, ctx ends or max passes.
func (l *effectLog) await(ctx context.Context, firsts func() map[string]uint64, max time.Duration) {
	wait := time.NewTimer(max)
	defer wait.Stop()
	for done := false; !done; {
		done = true
		for target, version := range firsts() {
			done = done && l.of(target, version) != nil
		}
		if done {
			break
		}
		select {
		case <-ctx.Done():
			done = true
		case <-wait.C:
			done = true
		case <-time.After(100 * time.Millisecond):
		}
	}
}
