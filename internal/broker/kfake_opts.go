package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kfake"
)

// StartWithKfakeOpts is Start with kfake options of the caller's applied
// after the ones Start derives from cfg, so that they win where both set
// the same thing. It is how the tests' broker (internal/testharness) and
// tests that need kfake's hooks (TLS listeners, broker configs, control
// functions) get their kfake: this package is the one place that starts
// one. Options that change the listeners' addresses (kfake.Ports) do not
// apply: the broker listens on cfg.Listen. Errors are Start's.
func StartWithKfakeOpts(ctx context.Context, cfg Config, opts ...kfake.Opt) (*Broker, error) {
	return startKfake(ctx, cfg, opts)
}
