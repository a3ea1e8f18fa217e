package kafkasink

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestKafkaTopicConfigsValidated: the topics New creates carry the configs
// fusebox asks for (the fuse topic compacted, plus the configured extras),
// and the broker reports them back. On Apache Kafka, which validates topic
// configs, an invalid extra is refused at New with an error naming the
// topic and wrapping INVALID_CONFIG; kfake accepts anything, so that half
// holds on Apache Kafka only (the conformance set runs it there).
func TestKafkaTopicConfigsValidated(t *testing.T) {
	k := testharness.StartBroker(t)
	cfg := testConfig(k)
	cfg.FuseTopicConfigs = map[string]string{"min.compaction.lag.ms": "1000", "segment.ms": "600000"}
	cfg.VerdictTopicConfigs = map[string]string{"retention.ms": "86400000"}
	newSink(t, cfg)
	adm := kadm.NewClient(k.Client(t))
	rcs, err := adm.DescribeTopicConfigs(context.Background(), cfg.FuseTopic, cfg.VerdictTopic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		cfg.FuseTopic:    {"cleanup.policy": "compact", "min.compaction.lag.ms": "1000", "segment.ms": "600000"},
		cfg.VerdictTopic: {"retention.ms": "86400000"},
	}
	for _, rc := range rcs {
		got := map[string]string{}
		for _, c := range rc.Configs {
			got[c.Key] = c.MaybeValue()
		}
		for key, v := range want[rc.Name] {
			if got[key] != v {
				t.Errorf("%s: %s = %q, want %q", rc.Name, key, got[key], v)
			}
		}
	}

	if k.Kind != testharness.KindApache {
		return
	}
	bad := testConfig(k)
	bad.FuseTopic, bad.VerdictTopic = "fuse-bad", "verdicts-bad"
	bad.FuseTopicConfigs = map[string]string{"min.compaction.lag.ms": "soon"}
	_, err = New(context.Background(), bad)
	var te *TopicError
	if !errors.As(err, &te) || te.Topic != "fuse-bad" || te.Op != "create" || !errors.Is(err, kerr.InvalidConfig) ||
		!strings.Contains(err.Error(), "min.compaction.lag.ms") {
		t.Fatalf("New with an invalid fuse topic config: %v; want a create error for fuse-bad wrapping INVALID_CONFIG and naming the config", err)
	}
}
