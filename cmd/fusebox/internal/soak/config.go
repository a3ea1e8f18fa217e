package soak

import (
	"fmt"
	"math"
	"strings"

	"github.com/fusebox-dev/fusebox/cmd/fusebox/internal/demo"
)

// DefaultConfigYAML is the demo's SLO file (every processor on: tail,
// drift, decay, corrections, scaling, burn rate; the breaker's rules),
// with its own consumer group, the placeholders of Options.ConfigYAML,
// /debug/pprof/ served (a failed sample saves the goroutines) and
// fusebox's default checkpoint interval (10s) for the demo's 1s: the demo
// checkpoints every second so that its view moves, which at 2,000 calls/s
// writes checkpoints of up to 90 MiB (every keyed partition's whole
// state) to the state topic every second — a load no deployment runs, and
// one that a broker on the soak's machine does not carry for an hour.
func DefaultConfigYAML() string {
	r := strings.NewReplacer(
		"checkpoint_every: 1s", "checkpoint_every: 10s",
		"\nhttp:\n", "\nhttp:\n  pprof: true\n",
		"brokers: [127.0.0.1:9092]", "brokers: [{{brokers}}]",
		"listen: 127.0.0.1:9464", "listen: {{listen}}",
		"group: fusebox-demo", "group: fusebox-soak",
		"client_id: fusebox-demo", "client_id: fusebox-soak",
	)
	return r.Replace(demo.ConfigYAML)
}

// render fills the placeholders of yaml.
func render(yaml string, brokers []string, listen string) (string, error) {
	for _, ph := range []string{"{{brokers}}", "{{listen}}"} {
		if !strings.Contains(yaml, ph) {
			return "", fmt.Errorf("%w: ConfigYAML has no %s placeholder", ErrOptions, ph)
		}
	}
	return strings.NewReplacer("{{brokers}}", strings.Join(brokers, ", "), "{{listen}}", listen).Replace(yaml), nil
}

// cosTurn is cos(2πx).
func cosTurn(x float64) float64 { return math.Cos(2 * math.Pi * x) }
