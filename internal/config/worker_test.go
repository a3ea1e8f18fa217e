package config

import (
	"testing"
	"time"
)

// TestWorkerLiveLagIsLatenessPlusIdleTimeout: a source is live (its
// silence advances an all-idle keyed partition) up to allowed lateness +
// idle source timeout behind the clock, so that an exporter's batching
// (OTel's batch span processor: 5s) under a 1s lateness still counts as
// live.
func TestWorkerLiveLagIsLatenessPlusIdleTimeout(t *testing.T) {
	f, err := Parse("x.yaml", []byte(minimal+"time: {allowed_lateness: 1s, idle_source_timeout: 7s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	wc, err := WorkerConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	if wc.AllowedLateness != time.Second || wc.LiveLag != 8*time.Second {
		t.Fatalf("lateness %v, live lag %v; want 1s and 8s", wc.AllowedLateness, wc.LiveLag)
	}
}
