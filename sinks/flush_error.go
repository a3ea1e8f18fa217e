package sinks

import (
	"fmt"
	"strconv"
)

// FlushError is returned by a sink's Flush and Close when their context
// ended before everything written was durable. It unwraps to the context's
// error.
type FlushError struct {
	Sink    string // the sink's package, e.g. "kafkasink"
	Pending int    // records (or rows) written before the call and not yet durable
	// Missing says what Pending counts, e.g. "records not acknowledged",
	// "rows not inserted".
	Missing string
	// Op names the operation LastErr came from, e.g. "delivery", "insert".
	Op      string
	LastErr error // the last error of Op, nil if none
	Err     error // the context's error
}

func (e *FlushError) Error() string {
	msg := e.Sink + ": flush: " + strconv.Itoa(e.Pending) + " " + e.Missing + ": " + fmt.Sprint(e.Err)
	if e.LastErr != nil {
		msg += "; last " + e.Op + " error: " + e.LastErr.Error()
	}
	return msg
}

func (e *FlushError) Unwrap() error { return e.Err }
