package testharness

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestEventuallyReturnsWhenTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	took := Eventually(t, 10*time.Second, "three polls", func() bool { return n.Add(1) == 3 })
	if n.Load() != 3 {
		t.Fatalf("polled %d times, want 3", n.Load())
	}
	if took > 5*time.Second {
		t.Fatalf("took %v for three polls", took)
	}
}

// fatalTB records Fatalf and ends the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestEventuallyFailsNamingWhatAndHowLong(t *testing.T) {
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Eventually(f, 50*time.Millisecond, "the impossible", func() bool { return false })
	}()
	<-done
	if want := "timed out after 50ms waiting for the impossible"; !strings.Contains(f.msg, want) {
		t.Fatalf("failure %q, want %q", f.msg, want)
	}
}

func TestPollReportsTimeout(t *testing.T) {
	start := time.Now()
	if Poll(30*time.Millisecond, func() bool { return false }) {
		t.Fatal("Poll of a false condition returned true")
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Fatalf("Poll gave up after %v, before its 30ms", d)
	}
	if !Poll(time.Second, func() bool { return true }) {
		t.Fatal("Poll of a true condition returned false")
	}
}
