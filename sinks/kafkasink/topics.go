package kafkasink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrFuseTopicNotCompacted is wrapped by New's error when the fuse topic
// exists without cleanup.policy=compact: gateways that rebuild their state
// from it would otherwise read an ever-growing log, and compaction is what
// keeps the newest command per target.
var ErrFuseTopicNotCompacted = errors.New("kafkasink: fuse topic is not compacted")

// TopicError says which topic could not be created or inspected.
type TopicError struct {
	Topic string
	Op    string // "create" or "describe configs"
	Err   error
}

func (e *TopicError) Error() string {
	return "kafkasink: " + e.Op + " topic " + e.Topic + ": " + e.Err.Error()
}
func (e *TopicError) Unwrap() error { return e.Err }

// ensureTopics creates the verdict and fuse topics when missing and checks
// that the fuse topic is compacted.
func ensureTopics(ctx context.Context, cl *kgo.Client, cfg *Config) error {
	adm := kadm.NewClient(cl)
	if cfg.CreateTopics {
		fuseConfigs := map[string]*string{}
		for k, v := range cfg.FuseTopicConfigs {
			fuseConfigs[k] = &v
		}
		compact := "compact"
		fuseConfigs["cleanup.policy"] = &compact
		verdictConfigs := map[string]*string{}
		for k, v := range cfg.VerdictTopicConfigs {
			verdictConfigs[k] = &v
		}
		topics := []struct {
			name       string
			partitions int32
			configs    map[string]*string
		}{
			{cfg.VerdictTopic, cfg.VerdictPartitions, verdictConfigs},
			{cfg.FuseTopic, cfg.FusePartitions, fuseConfigs},
		}
		if cfg.IncidentTopic != "" {
			topics = append(topics, struct {
				name       string
				partitions int32
				configs    map[string]*string
			}{cfg.IncidentTopic, cfg.VerdictPartitions, verdictConfigs})
		}
		for _, t := range topics {
			resp, err := adm.CreateTopic(ctx, t.partitions, cfg.ReplicationFactor, t.configs, t.name)
			if err == nil {
				err = resp.Err
			}
			if err != nil && resp.ErrMessage != "" && !strings.Contains(err.Error(), resp.ErrMessage) {
				// Apache Kafka says which config it refused only in the
				// message (kfake refuses none).
				err = fmt.Errorf("%w (%s)", err, resp.ErrMessage)
			}
			if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
				return &TopicError{Topic: t.name, Op: "create", Err: err}
			}
		}
	}
	rc, err := describeTopicConfigs(ctx, adm, cfg.FuseTopic)
	if err != nil {
		return &TopicError{Topic: cfg.FuseTopic, Op: "describe configs", Err: err}
	}
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" {
			if slices.Contains(strings.Split(c.MaybeValue(), ","), "compact") {
				return nil
			}
			return fmt.Errorf("%w: %s has cleanup.policy=%q", ErrFuseTopicNotCompacted, cfg.FuseTopic, c.MaybeValue())
		}
	}
	return fmt.Errorf("%w: %s reports no cleanup.policy (the default is delete)", ErrFuseTopicNotCompacted, cfg.FuseTopic)
}

// newTopicWait bounds how long describeTopicConfigs waits for a topic this
// process just created: Apache Kafka (KRaft) answers CreateTopics once the
// controller has the topic, and a broker serves requests about it only
// once it has replayed that metadata, a few milliseconds later; until then
// it says UNKNOWN_TOPIC_OR_PARTITION. kfake knows the topic at once.
const newTopicWait = 10 * time.Second

// describeTopicConfigs describes topic's configs, retrying
// UNKNOWN_TOPIC_OR_PARTITION every 50 ms for up to newTopicWait.
func describeTopicConfigs(ctx context.Context, adm *kadm.Client, topic string) (kadm.ResourceConfig, error) {
	deadline := time.Now().Add(newTopicWait)
	for {
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		var rc kadm.ResourceConfig
		if err == nil {
			rc, err = rcs.On(topic, nil)
			if err == nil {
				err = rc.Err
			}
		}
		if err == nil || !errors.Is(err, kerr.UnknownTopicOrPartition) || time.Now().After(deadline) {
			return rc, err
		}
		select {
		case <-ctx.Done():
			return rc, err
		case <-time.After(50 * time.Millisecond):
		}
	}
}
