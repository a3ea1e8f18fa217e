package fusehttp

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// Label is what the middleware did with one request; Metrics count by it.
type Label string

const (
	// LabelPass: no command in effect covers the request; sent as asked.
	LabelPass Label = "pass"
	// LabelAdmit: a throttle covers the request and it was in the
	// admitted fraction; sent as asked.
	LabelAdmit Label = "admit"
	// LabelProbe: the target is half-open and the request was in the
	// probe fraction; sent as asked so fusebox sees whether it recovered.
	LabelProbe Label = "probe"
	// LabelDegrade: the body's model was rewritten to the fallback.
	LabelDegrade Label = "degrade"
	// LabelRollback: routed to the baseline variant.
	LabelRollback Label = "rollback"
	// LabelFailover: a reject that WithFailover sent to another model.
	LabelFailover Label = "failover"
	// LabelReject: answered 503 with Retry-After.
	LabelReject Label = "reject"
	// LabelThrottle: in the refused fraction of a throttle; answered 429.
	LabelThrottle Label = "throttle"
	// LabelTooLarge: the body is over WithMaxBodyBytes; answered 413.
	LabelTooLarge Label = "too_large"
	// LabelUnkeyed: no key could be built (no model, a key callback
	// error, a body that is not JSON), or a degrade could not rewrite a
	// body that is not a JSON object; sent as asked (fail open).
	LabelUnkeyed Label = "unkeyed"
	// LabelBadRequest: the body could not be read; answered 400.
	LabelBadRequest Label = "bad_request"
)

// Labels lists every Label, in the order Counters exposes them.
var Labels = []Label{LabelPass, LabelAdmit, LabelProbe, LabelDegrade, LabelRollback, LabelFailover,
	LabelReject, LabelThrottle, LabelTooLarge, LabelUnkeyed, LabelBadRequest}

// Metrics receives one call per request the middleware judged (requests
// outside WithPaths are not counted). It must be safe for concurrent use
// and fast: it runs on the request path. Counters implements it; so does
// an adapter over a Prometheus CounterVec:
//
//	type promMetrics struct{ v *prometheus.CounterVec }
//	func (p promMetrics) Count(l fusehttp.Label) { p.v.WithLabelValues(string(l)).Inc() }
type Metrics interface {
	Count(Label)
}

// Counters counts requests by Label with atomics. Serve it (it is an
// http.Handler writing the Prometheus text format) or read Snapshot.
type Counters struct {
	// Name is the metric name; default DefaultMetricName.
	Name string
	n    [11]atomic.Uint64
}

// DefaultMetricName is Counters' metric name when Name is empty.
const DefaultMetricName = "fusebox_gateway_requests_total"

func labelIndex(l Label) int {
	for i, x := range Labels {
		if x == l {
			return i
		}
	}
	return -1
}

// Count adds one to l's counter; unknown labels are ignored.
func (c *Counters) Count(l Label) {
	if i := labelIndex(l); i >= 0 {
		c.n[i].Add(1)
	}
}

// Get returns l's count.
func (c *Counters) Get(l Label) uint64 {
	if i := labelIndex(l); i >= 0 {
		return c.n[i].Load()
	}
	return 0
}

// Snapshot returns every label's count (zeros included).
func (c *Counters) Snapshot() map[Label]uint64 {
	out := make(map[Label]uint64, len(Labels))
	for i, l := range Labels {
		out[l] = c.n[i].Load()
	}
	return out
}

// WritePrometheus writes the counters in the Prometheus text exposition
// format, one sample per label value, for a host app to append to its own
// /metrics.
func (c *Counters) WritePrometheus(w io.Writer) error {
	name := c.Name
	if name == "" {
		name = DefaultMetricName
	}
	if _, err := fmt.Fprintf(w, "# HELP %s Requests the fusebox middleware judged, by what it did.\n# TYPE %s counter\n", name, name); err != nil {
		return err
	}
	for i, l := range Labels {
		if _, err := fmt.Fprintf(w, "%s{decision=%q} %d\n", name, string(l), c.n[i].Load()); err != nil {
			return err
		}
	}
	return nil
}

// ServeHTTP serves WritePrometheus.
func (c *Counters) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_ = c.WritePrometheus(w)
}
