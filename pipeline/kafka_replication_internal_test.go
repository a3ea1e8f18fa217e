package pipeline

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/testharness"
)

// TestCheckReplicationWarnsOnWeakerTopics: an existing topic with fewer
// replicas and a lower min.insync.replicas than topics.replication_factor
// and topics.min_insync_replicas gets one warning per setting, naming the
// topic, the setting, what it has and what is asked; a topic that meets
// them, and a missing one, get none; with both settings at their defaults
// nothing is checked. (kfake has one broker: its topics have one replica.)
func TestCheckReplicationWarnsOnWeakerTopics(t *testing.T) {
	k := testharness.StartKafka(t)
	one := "1"
	k.CreateTopic(t, "weak", 2, map[string]*string{"min.insync.replicas": &one})
	k.CreateTopic(t, "fine", 1, map[string]*string{"min.insync.replicas": &one})
	adm := kadm.NewClient(k.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var logs strings.Builder
	log := slog.New(slog.NewJSONHandler(&logs, nil))

	got := checkReplication(ctx, adm, config.Topics{ReplicationFactor: 3, MinInsyncReplicas: 2}, []string{"weak", "missing"}, log)
	want := []string{
		"topic weak has replication factor 1, below the 3 the SLO file asks for (topics.replication_factor)",
		"topic weak has min.insync.replicas 1, below the 2 the SLO file asks for (topics.min_insync_replicas)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range []string{`"topic":"weak"`, `"setting":"replication factor"`, `"setting":"min.insync.replicas"`, `"have":1`, `"want":3`, `"want":2`} {
		if !strings.Contains(logs.String(), s) {
			t.Errorf("log lacks %s:\n%s", s, logs.String())
		}
	}
	if got := checkReplication(ctx, adm, config.Topics{ReplicationFactor: 1, MinInsyncReplicas: 1}, []string{"fine", "weak"}, log); len(got) != 0 {
		t.Errorf("topics that meet the settings: %v", got)
	}
	if got := checkReplication(ctx, adm, config.Topics{ReplicationFactor: -1}, []string{"weak"}, log); len(got) != 0 {
		t.Errorf("defaults: %v", got)
	}
}
