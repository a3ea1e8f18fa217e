package fuse

import (
	"context"
	"time"
)

// pollRetry is how long the client and the guard wait after a failed Poll
// of the fuse topic before they poll again.
const pollRetry = 200 * time.Millisecond

// sleep waits d and reports true, or reports false as soon as ctx is done.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
