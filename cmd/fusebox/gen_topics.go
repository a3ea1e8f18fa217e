package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// genTopicsTimeout bounds genTopicsReady: topic creation on a loaded broker
// (Apache Kafka on a shared 2-core CI machine took tens of seconds) is well
// inside it, a broker that never hosts the topic is reported after it.
const genTopicsTimeout = 60 * time.Second

// genTopicsReady makes sure every topic gen writes to exists and has a
// leader for each partition before the first record is produced.
//
// Why: gen used to rely on auto-creation at the first produce. The broker
// then answers UNKNOWN_TOPIC_OR_PARTITION until the topic is created and
// its leaders are elected, and franz-go fails the records after
// kgo.UnknownTopicRetries (4) such answers: on a loaded Apache Kafka broker
// that happened before the topic was ready, and gen exited 1 having
// published part of a scenario. Missing topics are created with the
// broker's defaults (partitions and replication -1, as auto-creation
// would); a broker that refuses the creation (CreateTopics not allowed by
// its ACLs, an old broker without default partitions) leaves auto-creation
// to the produce, as before. A topic still missing or leaderless after
// timeout is an error naming it.
func genTopicsReady(ctx context.Context, cl *kgo.Client, timeout time.Duration, topics ...string) error {
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	created := false
	var lastWhy string
	for {
		td, err := adm.ListTopics(ctx, topics...)
		if err != nil {
			lastWhy = err.Error()
		} else {
			missing, notReady := topicsNotReady(td, topics)
			if len(missing) == 0 && len(notReady) == 0 {
				return nil
			}
			why := append([]string(nil), notReady...)
			for _, m := range missing {
				why = append(why, m+" does not exist")
			}
			lastWhy = strings.Join(why, "; ")
			if len(missing) > 0 && !created {
				created = true
				if refused := createTopics(ctx, adm, missing); refused != nil {
					return nil // auto-creation at the produce, as before
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topics not ready within %v: %s", timeout, lastWhy)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// topicsNotReady says which of topics are missing (their names) and which
// are not ready yet ("<topic> <why>"), both sorted.
func topicsNotReady(td kadm.TopicDetails, topics []string) (missing, notReady []string) {
	for _, t := range topics {
		d, ok := td[t]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			missing = append(missing, t)
		case d.Err != nil:
			notReady = append(notReady, fmt.Sprintf("%s: %v", t, d.Err))
		case len(d.Partitions) == 0:
			notReady = append(notReady, t+" has no partitions yet")
		default:
			for _, p := range d.Partitions.Sorted() {
				if p.Leader < 0 || p.Err != nil {
					notReady = append(notReady, fmt.Sprintf("%s partition %d has no leader yet", t, p.Partition))
					break
				}
			}
		}
	}
	sort.Strings(missing)
	sort.Strings(notReady)
	return missing, notReady
}

// createTopics creates names with the broker's defaults; it returns the
// first refusal other than "already exists" (nil when all were created or
// existed).
func createTopics(ctx context.Context, adm *kadm.Client, names []string) error {
	resp, err := adm.CreateTopics(ctx, -1, -1, nil, names...)
	if err != nil {
		return err
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", r.Topic, r.Err)
		}
	}
	return nil
}
