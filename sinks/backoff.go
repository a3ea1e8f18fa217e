package sinks

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is capped exponential backoff with jitter between retries of a
// failed delivery: attempt 0 waits about Min, each further attempt twice as
// long, never more than Max. Jitter (±20%) spreads the reconnects of many
// fusebox instances after an outage; it affects only retry timing, never
// what is written.
type Backoff struct {
	Min time.Duration // first delay; 0 means 100ms
	Max time.Duration // cap; 0 means 10s
}

// Delay returns the wait before retry number attempt (0-based).
func (b Backoff) Delay(attempt int) time.Duration {
	lo, hi := b.Min, b.Max
	if lo <= 0 {
		lo = 100 * time.Millisecond
	}
	if hi <= 0 {
		hi = 10 * time.Second
	}
	if hi < lo {
		hi = lo
	}
	d := lo
	for i := 0; i < attempt && d < hi; i++ {
		d *= 2
	}
	if d > hi {
		d = hi
	}
	// ±20% jitter.
	j := time.Duration(rand.Int64N(int64(d)/5*2+1)) - d/5
	return d + j
}

// Sleep waits Delay(attempt), or less when ctx ends or stop is closed; it
// reports whether the full delay passed.
func (b Backoff) Sleep(ctx context.Context, stop <-chan struct{}, attempt int) bool {
	t := time.NewTimer(b.Delay(attempt))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	}
}
