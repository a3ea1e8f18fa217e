package sinks

import (
	"context"
	"errors"
	"testing"
)

// The message names the sink, what is missing and the last error, and the
// error unwraps to the context's.
func TestFlushErrorMessage(t *testing.T) {
	e := &FlushError{Sink: "kafkasink", Pending: 3, Missing: "records not acknowledged", Op: "delivery",
		LastErr: errors.New("broker down"), Err: context.DeadlineExceeded}
	if got, want := e.Error(), "kafkasink: flush: 3 records not acknowledged: context deadline exceeded; last delivery error: broker down"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e.LastErr = nil
	if got, want := e.Error(), "kafkasink: flush: 3 records not acknowledged: context deadline exceeded"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, context.DeadlineExceeded) {
		t.Error("FlushError does not unwrap to the context's error")
	}
}
