package testharness

import (
	"sync"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Freeze makes the broker stop answering, as a broker that hangs (a long
// GC pause, a stalled disk) and not one that is down: connections stay
// open and requests wait until their clients time out. On kfake a control
// function blocks the cluster's one request loop, so every request waits;
// on Apache Kafka the JVM is sent SIGSTOP. thaw resumes the broker (SIGCONT,
// or the control returns and lets the cluster handle the request); it is
// safe to call more than once and runs when the test ends, before the
// broker is closed.
func (k *Kafka) Freeze(t testing.TB) (thaw func()) {
	t.Helper()
	var once sync.Once
	switch {
	case k.Cluster != nil:
		woken := make(chan struct{})
		c := k.Cluster
		c.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
			// Not handled: once thawed, this request and every later
			// one are handled as usual (an unhandled control stays, and
			// returns at once).
			<-woken
			return nil, nil, false
		})
		thaw = func() { once.Do(func() { close(woken) }) }
	case k.apache != nil:
		p := k.apache.cmd.Process
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			t.Fatalf("testharness: freeze apache kafka: %v", err)
		}
		thaw = func() {
			once.Do(func() {
				if err := p.Signal(syscall.SIGCONT); err != nil {
					t.Errorf("testharness: thaw apache kafka: %v", err)
				}
			})
		}
	default:
		t.Fatal("testharness: Freeze: no broker")
	}
	t.Cleanup(thaw)
	return thaw
}
