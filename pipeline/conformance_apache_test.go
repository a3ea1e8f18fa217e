package pipeline_test

import (
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestKafkaVerdictsOnApacheEqualKfake runs the uninterrupted reference run of
// the restart and scale-out tests on Apache Kafka (FUSEBOX_KAFKA=apache,
// through clusterReference) and again, on the same input, on kfake, and
// compares what reached the verdict and fuse topics: every verdict id with
// the same value, every fuse command, nothing extra. It is part of the
// Apache conformance set (scripts/test); on kfake alone it has nothing to
// compare.
func TestKafkaVerdictsOnApacheEqualKfake(t *testing.T) {
	if testharness.BrokerKind(t) != testharness.KindApache {
		t.Skipf("compares an Apache Kafka run with a kfake run: set %s=apache (scripts/test does)", testharness.EnvKafka)
	}
	onApache := clusterReference(t)
	onKfake := runClusterReferenceOn(t, createClusterTopics(t, testharness.StartKafka(t, kfake.GroupMinSessionTimeout(500*time.Millisecond))))
	compareClusterOutputs(t, "kfake vs Apache Kafka", onApache, onKfake)
	t.Logf("Apache Kafka and kfake: %d verdicts, %d fuse commands, equal", len(onApache.verdicts), len(onApache.commands))
}
