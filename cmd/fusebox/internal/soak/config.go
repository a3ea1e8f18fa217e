package soak

import (
	"fmt"
	"math"
	"strings"

	"github.com/fusebox-dev/fusebox/cmd/fusebox/internal/demo"
)

// DefaultConfigYAML is the demo's SLO file (every processor on: tail,
// drift, decay, corrections, scaling, burn rate; the breaker's rules),
// with its own consumer group and the placeholders of Options.ConfigYAML.
func DefaultConfigYAML() string {
	r := strings.NewReplacer(
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
