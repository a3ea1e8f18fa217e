package ingest

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/fusebox-dev/fusebox/schemas"
)

// The reasons of Stats.TimingsDropped: why a library-form timing
// (schemas.DecodeStats.Dropped) was left out of a span that was kept.
const (
	DroppedEventBeforeStart = "event_before_start" // a first-token event before the span's start
	DroppedEventAfterEnd    = "event_after_end"    // a first-token event after the span's end
	DroppedServerTTFT       = "server_ttft"        // gen_ai.server.time_to_first_token < 0 or > the duration
	DroppedServerTPOT       = "server_tpot"        // gen_ai.server.time_per_output_token < 0
)

var droppedReasons = [4]string{DroppedEventBeforeStart, DroppedEventAfterEnd, DroppedServerTTFT, DroppedServerTPOT}

// droppedLog counts the dropped timings per reason and logs the first of
// each reason once per consumer: the spans are kept, so a library whose
// clock or rounding is off shows as spans without a TTFT, and this says
// why. Cheap: a few atomic adds per record that has any.
type droppedLog struct {
	counts [4]atomic.Int64
	logged [4]atomic.Bool
}

func (l *droppedLog) note(log *slog.Logger, r *Record, d schemas.DroppedTimings) {
	for i, n := range [4]int{d.EventBeforeStart, d.EventAfterEnd, d.ServerTTFT, d.ServerTPOT} {
		if n == 0 {
			continue
		}
		l.counts[i].Add(int64(n))
		if l.logged[i].CompareAndSwap(false, true) {
			log.Log(context.Background(), slog.LevelWarn, "ingest: a library's timing out of range was left out of its span (the span is kept); further ones are only counted",
				"reason", droppedReasons[i], "topic", r.Topic, "partition", r.Partition, "offset", r.Offset)
		}
	}
}

// snapshot returns the counts by reason; nil when there are none.
func (l *droppedLog) snapshot() map[string]int64 {
	var out map[string]int64
	for i := range l.counts {
		if n := l.counts[i].Load(); n > 0 {
			if out == nil {
				out = map[string]int64{}
			}
			out[droppedReasons[i]] = n
		}
	}
	return out
}
