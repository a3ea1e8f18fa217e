package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/fusebox-dev/fusebox/cmd/fusebox/internal/loop"
	"github.com/fusebox-dev/fusebox/schemas"
)

// demoLoop is `fusebox demo --loop`: cmd/fusebox/internal/loop's run with a line per
// command the gateway applies, then the table.
func demoLoop(ctx context.Context, stdout, stderr io.Writer) int {
	o := loop.DefaultOptions()
	var mu sync.Mutex
	o.OnCommand = func(at time.Duration, c schemas.FuseCommand) {
		what := "traffic as asked"
		switch {
		case c.State == schemas.StateClosed:
		case c.Action == schemas.ActionDegrade:
			what = "the gateway routes it to " + c.Fallback
		case c.Action == schemas.ActionTrip || c.Action == schemas.ActionHalfOpen:
			what = "the gateway fails it over to " + loop.Fallback
		}
		if c.State == schemas.StateHalfOpen {
			what += fmt.Sprintf(", probing %.0f%% (shadow copies)", 100*c.ThrottleFraction)
		}
		mu.Lock()
		fmt.Fprintf(stdout, "+%5.1fs  %-22s v%d %-9s %-9s %s\n", at.Seconds(), loopKey(c.Target), c.Version, c.Action, c.State, what)
		mu.Unlock()
	}
	fmt.Fprintf(stderr, "fusebox demo --loop: users → a fusehttp gateway → simulated providers; the gateway's spans → fusebox → signed commands → the gateway (%v of wall time)\n", o.Duration)
	for _, inc := range o.Incidents {
		fmt.Fprintf(stderr, "  incident %q: %s on %s/%s from +%v to +%v\n", inc.Name, inc.Kind, inc.Target.Tenant, inc.Target.Model, inc.Start, inc.End)
	}
	res, err := loop.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "fusebox demo --loop:", err)
		return exitFailure
	}
	fmt.Fprintln(stdout)
	res.WriteTable(stdout, o.Budget, o.ConfidenceFloor)
	return exitOK
}

func loopKey(k schemas.Key) string {
	return k.Tenant + "/" + k.Service + "/" + k.Model + "/" + k.Variant
}
