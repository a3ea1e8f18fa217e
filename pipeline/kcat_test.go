package pipeline_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/internal/sim/replay"
)

// envRequireKcat, when "1", turns the skip without kcat into a failure
// (.ci/run sets it).
const envRequireKcat = "FUSEBOX_REQUIRE_KCAT"

// TestKafkaKcatPublishedTrafficSameVerdicts publishes the restart tests' traffic
// the way a team's tooling would, with kcat (librdkafka, a third client
// implementation besides franz-go and kafka-go): every OTLP protobuf
// message is a file, sent one file per message to its span partition, and
// the corrections are a JSON-lines file, one message per line. The
// pipeline then runs on it; its verdicts and fuse commands must equal the
// uninterrupted run's on the franz-go-published input.
func TestKafkaKcatPublishedTrafficSameVerdicts(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv(envRequireKcat) == "1" {
			t.Fatalf("kcat not found and %s=1: apt-get install kcat", envRequireKcat)
		}
		t.Skipf("kcat not found (apt-get install kcat; %s=1 makes this a failure)", envRequireKcat)
	}
	want := clusterReference(t)
	k := startTestCluster(t)
	dir := t.TempDir()
	spanFiles := map[int32][]string{}
	var corrections strings.Builder
	corrPart := int32(-1)
	for i, r := range clusterRecords(t, 0, 0) {
		switch r.Topic {
		case replay.SpanTopic:
			path := filepath.Join(dir, fmt.Sprintf("spans-%d-%05d.pb", r.Partition, i))
			if err := os.WriteFile(path, r.Value, 0o644); err != nil {
				t.Fatal(err)
			}
			spanFiles[r.Partition] = append(spanFiles[r.Partition], path)
		case replay.CorrectionTopic:
			if strings.Contains(string(r.Value), "\n") {
				t.Fatalf("a correction's JSON holds a newline: it cannot be one line of a JSON-lines file")
			}
			corrections.Write(r.Value)
			corrections.WriteByte('\n')
			corrPart = r.Partition
		default:
			t.Fatalf("unexpected topic %s", r.Topic)
		}
	}
	corrPath := filepath.Join(dir, "corrections.jsonl")
	if err := os.WriteFile(corrPath, []byte(corrections.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		base := []string{"-P", "-b", strings.Join(k.Brokers, ","), "-X", "enable.idempotence=true", "-q"}
		out, err := exec.Command(kcat, append(base, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kcat %v: %v\n%s", args[:4], err, out)
		}
	}
	n := 0
	for p, files := range spanFiles {
		// Files mode: each file is one message, sent in argument order.
		run(append([]string{"-t", replay.SpanTopic, "-p", fmt.Sprint(p)}, files...)...)
		n += len(files)
	}
	if corrPart >= 0 {
		run("-t", replay.CorrectionTopic, "-p", fmt.Sprint(corrPart), "-l", corrPath)
	}
	t.Logf("kcat published %d OTLP files to %d partitions and %d corrections (%s broker)", n, len(spanFiles),
		strings.Count(corrections.String(), "\n"), k.Kind)
	got := runClusterPublished(t, k)
	compareClusterOutputs(t, "kcat-published", want, got)
}
