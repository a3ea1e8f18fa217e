package testharness

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// serverProcess is a server the harness runs as a child process
// (clickhouse-server, the Apache Kafka JVM).
type serverProcess struct {
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has been waited for
	waitErr error         // valid after exited is closed
}

// start starts cmd, its stdout and stderr appended to the file consoleLog.
// If the test binary dies without stopping the server (a panic, a
// -timeout), the kernel kills the server too instead of leaving it:
// Pdeathsig. The kernel sends it when the *thread* that started the child
// exits, and Go may retire threads, so the process is started and waited
// for on one goroutine locked to its thread, which lives as long as the
// server. p.exited is closed once the process has been waited for.
func (p *serverProcess) start(cmd *exec.Cmd, consoleLog string) error {
	console, err := os.OpenFile(consoleLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("console log: %w", err)
	}
	p.cmd = cmd
	p.exited = make(chan struct{})
	cmd.Stdout = console
	cmd.Stderr = console
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.waitErr = cmd.Wait()
		console.Close()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		console.Close()
		return fmt.Errorf("start %s: %w", cmd.Args[0], err)
	}
	return nil
}

// exitedBeforeReady returns an error naming the exit once the process has
// exited, nil while it runs: the readiness checks call it between polls.
func (p *serverProcess) exitedBeforeReady() error {
	select {
	case <-p.exited:
		return fmt.Errorf("exited before it was ready (%v)", p.waitErr)
	default:
		return nil
	}
}

// stop sends a running process SIGTERM, waits up to grace, then SIGKILL,
// and returns once the process has been waited for; killed reports the
// SIGKILL. A process that has exited already is left as it is.
func (p *serverProcess) stop(grace time.Duration) (killed bool) {
	select {
	case <-p.exited:
		return false
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return false
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return true
	}
}
