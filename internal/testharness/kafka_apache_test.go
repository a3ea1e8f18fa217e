package testharness

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestApacheKafkaRoundTrip starts the Apache Kafka broker and moves records
// through an auto-created topic; it logs the start time.
func TestApacheKafkaRoundTrip(t *testing.T) {
	k := StartApacheKafka(t)
	t.Logf("Apache Kafka %s ready in %v", k.Version, k.StartedIn())
	if k.Kind != KindApache || k.Cluster != nil {
		t.Fatalf("kind %q cluster %v", k.Kind, k.Cluster)
	}
	k.Produce(t, &kgo.Record{Topic: "t", Value: []byte("a")}, &kgo.Record{Topic: "t", Value: []byte("b")})
	got := k.ReadAll(t, "t", 2, 30*time.Second)
	if len(got) != 2 || string(got[0].Value)+string(got[1].Value) != "ab" {
		t.Fatalf("read %d records, want a and b", len(got))
	}
}

// TestApacheKafkaSCRAM: the SASL listener takes the right SCRAM password and
// refuses a wrong one.
func TestApacheKafkaSCRAM(t *testing.T) {
	k := StartApacheKafka(t, WithSASL(SASLUser{"SCRAM-SHA-512", "u", "pw"}))
	try := func(pass string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...),
			kgo.SASL(scram.Auth{User: "u", Pass: pass}.AsSha512Mechanism()), kgo.AllowAutoTopicCreation())
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	if err := try("pw"); err != nil {
		t.Fatalf("right password: %v", err)
	}
	err := try("wrong")
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "authentication") {
		t.Fatalf("wrong password: %v, want an authentication error", err)
	}
	t.Logf("wrong password: %v", err)
}

// envApacheHelper makes TestApacheHelperProcess start a broker; the
// tests below run it in a subprocess with a PATH that has no java.
const envApacheHelper = "FUSEBOX_TESTHARNESS_APACHE_HELPER"

func TestApacheHelperProcess(t *testing.T) {
	if os.Getenv(envApacheHelper) != "1" {
		t.Skip("helper for TestApacheKafkaWithoutJava")
	}
	StartBroker(t)
	t.Log("HELPER started a broker")
}

// TestApacheKafkaWithoutJava: FUSEBOX_KAFKA=apache on a machine without
// java skips with a message naming what is missing, and fails when
// FUSEBOX_REQUIRE_APACHE_KAFKA=1.
func TestApacheKafkaWithoutJava(t *testing.T) {
	for _, tc := range []struct {
		require string
		wantErr bool
		want    string
	}{
		{"", false, "--- SKIP"},
		{"1", true, "--- FAIL"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestApacheHelperProcess$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), envApacheHelper+"=1", EnvKafka+"=apache", "PATH="+t.TempDir(), "JAVA_HOME=",
			EnvRequireApacheKafka+"="+tc.require, envNoMain+"=1")
		out, err := cmd.CombinedOutput()
		if (err != nil) != tc.wantErr || !strings.Contains(string(out), tc.want) ||
			!strings.Contains(string(out), "no java on PATH") || strings.Contains(string(out), "HELPER started") {
			t.Errorf("%s=%q: err %v, want %s and the reason:\n%s", EnvRequireApacheKafka, tc.require, err, tc.want, out)
		}
	}
}

// TestBrokerKind: the env var picks the broker; a typo is an error.
func TestBrokerKind(t *testing.T) {
	for v, want := range map[string]string{"": KindKfake, "kfake": KindKfake, " Apache ": KindApache, "redpanda": ""} {
		got, err := brokerKind(func(string) string { return v })
		if got != want || (err != nil) != (want == "") {
			t.Errorf("%s=%q: %q, %v; want %q", EnvKafka, v, got, err, want)
		}
	}
}

// TestApacheFormatDashClusterID: a random cluster id may start with "-"
// (one in 64); the storage tool must still take it as the id.
func TestApacheFormatDashClusterID(t *testing.T) {
	java, err := findJava()
	if err != nil {
		t.Skip(err)
	}
	jars, version, err := kafkaJars()
	if err != nil {
		t.Skip(err)
	}
	b := &apacheBroker{java: java, jars: jars, version: version, dir: t.TempDir()}
	for _, p := range []*int{&b.plainPort, &b.saslPort, &b.ctrlPort} {
		if *p, err = freeLoopbackPort(); err != nil {
			t.Fatal(err)
		}
	}
	var c brokerConfig
	if err := b.writeConfig(&c); err != nil {
		t.Fatal(err)
	}
	if err := b.formatWithID(&c, "-AAAAAAAAAAAAAAAAAAAAA"); err != nil {
		t.Fatal(err)
	}
}
