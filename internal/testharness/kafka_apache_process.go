package testharness

import "errors"

// ErrNoApacheKafka is wrapped by LaunchApacheKafka's error when Apache
// Kafka cannot be run here (no java, or neither the cached jars nor mvn):
// the caller skips, or fails under FUSEBOX_REQUIRE_APACHE_KAFKA.
var ErrNoApacheKafka = errNoApache

// ApacheProcess is an Apache Kafka broker started outside a Go test, for
// suites in other languages (clients/python starts one through
// internal/testharness/cmd/pyharness). Stop it when done: it is a JVM.
type ApacheProcess struct {
	// Bootstrap is the plaintext listener, host:port on loopback.
	Bootstrap string
	b         *apacheBroker
}

// LaunchApacheKafka starts a single-node Apache Kafka broker as
// StartApacheKafka does (same jars, config and readiness check), without a
// testing.TB.
func LaunchApacheKafka(opts ...BrokerOpt) (*ApacheProcess, error) {
	var c brokerConfig
	for _, o := range opts {
		o(&c)
	}
	b, err := launchApache(&c)
	if err != nil {
		return nil, err
	}
	return &ApacheProcess{Bootstrap: b.addr(b.plainPort), b: b}, nil
}

// Stop stops the broker (SIGTERM, then SIGKILL after a grace period) and
// removes its directory.
func (p *ApacheProcess) Stop() error {
	if p == nil || p.b == nil {
		return errors.New("testharness: ApacheProcess not started")
	}
	return p.b.Stop()
}
