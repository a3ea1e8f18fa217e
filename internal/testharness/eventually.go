package testharness

import (
	"testing"
	"time"
)

// Poll intervals of Eventually: the first check is immediate, then the wait
// between checks doubles from pollMin up to pollMax, so a condition that
// holds at once costs nothing and a slow one (a Kafka admin call, a
// ClickHouse query) is asked at most ten times a second.
const (
	pollMin = 10 * time.Millisecond
	pollMax = 100 * time.Millisecond
)

// Eventually polls cond until it returns true and returns how long that
// took. If cond still returns false after timeout it fails the test with
// t.Fatalf, naming what was awaited and for how long: "timed out after 30s
// waiting for <what>". cond runs on the test's goroutine, so it may call
// t.Fatal itself.
//
// It is the one wait helper of the module's tests: wait on the event a
// test stands for (a committed offset, a checkpoint, a verdict count, a
// log line), never for a fixed time.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	if !Poll(timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
	return time.Since(start)
}

// Poll is Eventually without the failure: it polls cond the same way and
// reports whether it held within timeout. Use it where the failure message
// must say more than what was awaited (the state at the deadline).
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for wait := pollMin; !cond(); wait = min(2*wait, pollMax) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
	}
	return true
}
