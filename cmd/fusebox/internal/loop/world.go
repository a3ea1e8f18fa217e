package loop

import (
	"context"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/fuse/fusehttp"
	"github.com/fusebox-dev/fusebox/schemas"
)

// never is the decider of the gateway without the loop.
type never struct{}

func (never) Decide(schemas.Key) fuse.Decision { return fuse.Decision{} }

// world is one gateway with its providers (one per model: Fallback and
// the incidents' models, the same seeds and scripts in both worlds) and
// its users' calls per incident.
type world struct {
	gw    *Gateway
	prov  map[string]*Provider
	users map[string]*calls
}

// newWorld starts the providers and a gateway whose middleware follows d,
// failing over to Fallback; cl (nil: none) exports its spans to
// spansTopic; shadow is the model that answers half-open probes' users
// ("": the probe's own answer).
func newWorld(o Options, d fusehttp.Decider, cl *kgo.Client, spansTopic, shadow string, start time.Time) (*world, error) {
	models := []string{Fallback}
	for _, inc := range o.Incidents {
		if !slices.Contains(models, inc.Target.Model) {
			models = append(models, inc.Target.Model)
		}
	}
	w := &world{prov: map[string]*Provider{}, users: map[string]*calls{}}
	routes := map[string]string{}
	for i, m := range models {
		pv := NewProvider(m, o.Median, o.Seed+uint64(i), start, o.Incidents)
		w.prov[m], routes[m] = pv, pv.URL()
	}
	var counters fusehttp.Counters
	mw, err := fusehttp.New(d, fusehttp.WithMetrics(&counters), fusehttp.WithFailover(func(schemas.Key, fuse.Decision) string { return Fallback }))
	if err != nil {
		w.close()
		return nil, err
	}
	if w.gw, err = NewGateway(mw, &counters, routes, cl, spansTopic, o.Seed, start, shadow); err != nil {
		w.close()
		return nil, err
	}
	for _, inc := range o.Incidents {
		w.users[inc.Name] = &calls{}
	}
	return w, nil
}

// close stops the gateway and the providers.
func (w *world) close() {
	if w.gw != nil {
		w.gw.Close()
	}
	for _, pv := range w.prov {
		pv.Close()
	}
}

// drive sends the users' requests for o.Duration: open-loop arrivals at
// o.Rate per incident key, the same instants sent to both gateways, and
// o.DirectRate straight to the incident's provider (recorded in direct);
// each request on its own goroutine. It returns once every request has
// been answered or has timed out.
func drive(ctx context.Context, o Options, start time.Time, with, without *world, direct map[string]*calls) {
	// A long timeout: a loaded machine's delays must not turn into errors.
	// Connections per host are bounded (file descriptors): a stalled
	// machine queues the users' requests, and their latency counts it.
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128, MaxConnsPerHost: 128}, Timeout: 30 * time.Second}
	rctx, stopRun := context.WithTimeout(ctx, o.Duration)
	defer stopRun()
	var wg sync.WaitGroup
	// Arrivals are counted from the elapsed time, not from ticks, so a
	// loaded machine that skips ticks sends late, never fewer.
	tick := 10 * time.Millisecond
	sent := map[string]int{}
	dsent := map[string]int{}
	t := time.NewTicker(tick)
loop:
	for {
		select {
		case <-rctx.Done():
			break loop
		case <-t.C:
		}
		at := time.Since(start)
		for _, inc := range o.Incidents {
			for ; float64(sent[inc.Name]) < o.Rate*at.Seconds(); sent[inc.Name]++ {
				// A variant incident's users: CanaryShare of them on its
				// variant, spread by n·φ mod 1.
				variant := "baseline"
				if _, f := math.Modf(float64(sent[inc.Name]) * 0.6180339887498949); inc.Target.Variant != "" && f < o.CanaryShare {
					variant = inc.Target.Variant
				}
				for _, w := range []*world{with, without} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						send(rctx, hc, w.gw.URL(), inc.Target.Tenant, inc.Target.Model, variant, at, w.users[inc.Name])
					}()
				}
			}
			for ; float64(dsent[inc.Name]) < o.DirectRate*at.Seconds(); dsent[inc.Name]++ {
				variant := inc.Target.Variant
				if variant == "" {
					variant = "baseline"
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					send(rctx, hc, with.prov[inc.Target.Model].URL(), inc.Target.Tenant, inc.Target.Model, variant, at, direct[inc.Name])
				}()
			}
		}
	}
	t.Stop()
	wg.Wait()
}
