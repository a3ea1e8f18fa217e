package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/fusebox-dev/fusebox/internal/broker"
	"github.com/fusebox-dev/fusebox/internal/sim/gen"
	"github.com/fusebox-dev/fusebox/internal/testharness"
)

// securityDoc is the manual's page with the ACLs (relative to this
// package).
const securityDoc = "../../docs/security.md"

// readmeACLs parses the kafka-acls.sh lines of the ACLs section of
// securityDoc into kfake ACLs per principal name.
func readmeACLs(t *testing.T) map[string][]kfake.ACL {
	t.Helper()
	b, err := os.ReadFile(securityDoc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n## ACLs\n")
	if i < 0 {
		t.Fatal(securityDoc + " has no ACLs section")
	}
	s = s[i+1:]
	if j := strings.Index(s[3:], "\n## "); j >= 0 {
		s = s[:j+3]
	}
	ops := map[string]kmsg.ACLOperation{
		"Read": kmsg.ACLOperationRead, "Write": kmsg.ACLOperationWrite, "Describe": kmsg.ACLOperationDescribe,
		"DescribeConfigs": kmsg.ACLOperationDescribeConfigs, "Create": kmsg.ACLOperationCreate,
		"IdempotentWrite": kmsg.ACLOperationIdempotentWrite,
	}
	out := map[string][]kfake.ACL{}
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "kafka-acls.sh ") {
			continue
		}
		f := strings.Fields(line)
		var principal, name string
		var res kmsg.ACLResourceType
		var opl []kmsg.ACLOperation
		pattern := kmsg.ACLResourcePatternTypeLiteral
		for k := 0; k < len(f); k++ {
			switch f[k] {
			case "--allow-principal":
				k++
				principal = strings.TrimPrefix(f[k], "User:")
			case "--operation":
				k++
				op, ok := ops[f[k]]
				if !ok {
					t.Fatalf("ACL line %q: unknown operation %s", line, f[k])
				}
				opl = append(opl, op)
			case "--topic":
				k++
				res, name = kmsg.ACLResourceTypeTopic, f[k]
			case "--group":
				k++
				res, name = kmsg.ACLResourceTypeGroup, f[k]
			case "--cluster":
				res, name = kmsg.ACLResourceTypeCluster, "kafka-cluster"
			case "--resource-pattern-type":
				k++
				if f[k] == "prefixed" {
					pattern = kmsg.ACLResourcePatternTypePrefixed
				}
			}
		}
		if principal == "" || name == "" || len(opl) == 0 {
			t.Fatalf("ACL line %q: no principal, resource or operation", line)
		}
		for _, op := range opl {
			out[principal] = append(out[principal], kfake.ACL{Resource: res, Name: name, Pattern: pattern, Operation: op, Allow: true})
		}
	}
	for _, p := range []string{"fusebox", "otel-collector", "app", "gateway"} {
		if len(out[p]) == 0 {
			t.Fatalf("the ACLs of %s have no line for User:%s", securityDoc, p)
		}
	}
	return out
}

// splitProducer publishes spans as one principal and corrections as
// another, as a Collector and an application would.
type splitProducer struct{ spans, corrections *kgo.Client }

func (p splitProducer) Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	if r.Topic == "otlp_spans" {
		p.spans.Produce(ctx, r, promise)
		return
	}
	p.corrections.Produce(ctx, r, promise)
}

func (p splitProducer) Flush(ctx context.Context) error {
	if err := p.spans.Flush(ctx); err != nil {
		return err
	}
	return p.corrections.Flush(ctx)
}

// TestRunWithTheREADMEACLs runs `fusebox run` on a broker that enforces
// ACLs (kfake with SASL PLAIN), every principal holding exactly the
// kafka-acls.sh lines of docs/security.md: fusebox creates its topics, becomes ready,
// and writes verdicts, fuse commands and a DLQ record with no sink error,
// from spans the Collector's principal wrote and corrections the app's
// principal wrote; the gateway's principal cannot write the fuse topic.
func TestRunWithTheREADMEACLs(t *testing.T) {
	acls := readmeACLs(t)
	b, err := broker.Start(context.Background(), broker.Config{Listen: "127.0.0.1:0", Partitions: broker.DefaultPartitions, LogLevel: "none",
		Users: []broker.SASLUser{
			{Mechanism: broker.MechPlain, User: "admin", Password: "admin-secret"}, // a superuser: no ACLs
			{Mechanism: broker.MechPlain, User: "fusebox", Password: "fusebox-secret"},
			{Mechanism: broker.MechPlain, User: "otel-collector", Password: "collector-secret"},
			{Mechanism: broker.MechPlain, User: "app", Password: "app-secret"},
			{Mechanism: broker.MechPlain, User: "gateway", Password: "gateway-secret"},
		},
		ACLs: map[string][]kfake.ACL{"fusebox": acls["fusebox"], "otel-collector": acls["otel-collector"], "app": acls["app"], "gateway": acls["gateway"]},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	brokers := []string{b.Addr()}
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "out.jsonl")
	cfg := writeFile(t, dir, "fusebox.yaml", withKafka(runConfig(brokers,
		"http: {listen: 127.0.0.1:0}\nsigning: {insecure_unsigned: true}\nsinks: {jsonl: {path: "+jsonl+"}}\n"),
		"  sasl: {mechanism: PLAIN, username: fusebox, password: fusebox-secret}\n"))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr, addr, done := startRun(t, ctx, "--config", cfg)
	waitReady(t, addr)

	as := func(user, pass string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()),
			kgo.ProducerLinger(5*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	collector, app := as("otel-collector", "collector-secret"), as("app", "app-secret")
	gc := gen.DefaultConfig()
	gc.Scenario, gc.Start, gc.Speedup, gc.ProgressEvery = errorBurst(), time.Now().Add(-time.Hour).Truncate(time.Minute), 0, 0
	pctx, pcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer pcancel()
	sum, err := gen.Run(pctx, gc, splitProducer{spans: collector, corrections: app})
	if err != nil {
		t.Fatalf("publishing as otel-collector and app: %v", err)
	}
	if err := collector.ProduceSync(pctx, &kgo.Record{Topic: "otlp_spans", Value: []byte("\xffnot a protobuf")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if sum.Corrections == 0 {
		t.Fatal("the scenario published no corrections: the app's ACL is not exercised")
	}

	var m map[string]float64
	testharness.Eventually(t, 60*time.Second, "verdicts, a fuse command and a DLQ record written", func() bool {
		m = scrape(t, addr)
		return m[`fusebox_records_in_total{topic="otlp_spans"}`] == float64(sum.SpanMessages+1) &&
			m[`fusebox_sink_records_total{destination="fusebox.verdicts",sink="kafka"}`] > 0 &&
			m[`fusebox_sink_records_total{destination="fusebox.fuse",sink="kafka"}`] > 0 &&
			sumPrefix(m, "fusebox_dlq_records_total{") >= 1
	})
	if n := sumPrefix(m, "fusebox_sink_errors_total{"); n != 0 {
		t.Errorf("%v sink errors with the ACLs of docs/security.md", n)
	}
	if code, _ := get(t, "http://"+addr+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz %d after the traffic", code)
	}
	// The gateway may read but not write the fuse topic.
	gw, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.SASL(plain.Auth{User: "gateway", Pass: "gateway-secret"}.AsMechanism()),
		kgo.DisableIdempotentWrite(), kgo.RecordRetries(1), kgo.RecordDeliveryTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	if err := gw.ProduceSync(ctx, &kgo.Record{Topic: "fusebox.fuse", Key: []byte("t/s/m/v")}).FirstErr(); err == nil {
		t.Error("the gateway's principal wrote the fuse topic")
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
}

// sumPrefix adds the series whose name and labels start with prefix.
func sumPrefix(m map[string]float64, prefix string) float64 {
	var n float64
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}
