package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
)

const keys = "k1:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

// publish signs cmd with keys and writes it as fusebox does.
func publish(t *testing.T, k *testharness.Kafka, cmd schemas.FuseCommand) {
	ring, err := fuse.ParseKeyring(keys)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := fuse.NewSigner(ring)
	cmd, err = s.Sign(cmd)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := cmd.MarshalJSON()
	k.Produce(t, &kgo.Record{Topic: fuse.DefaultTopic, Key: []byte(cmd.Target.String()), Value: v})
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// startFuseTopic starts a kfake broker with the fuse topic, compacted as
// fusebox creates it, and sets the gateway's keys (FUSEBOX_FUSE_KEYS).
func startFuseTopic(t *testing.T) *testharness.Kafka {
	t.Helper()
	k := testharness.StartKafka(t)
	compact := "compact"
	k.CreateTopic(t, fuse.DefaultTopic, 3, map[string]*string{"cleanup.policy": &compact})
	t.Setenv(fuse.EnvKeys, keys)
	return k
}

// degradeBig is the command the decision tests publish: */chat/big/*
// degraded to small, issued now, expiring in an hour.
func degradeBig() schemas.FuseCommand {
	now := time.Now()
	return schemas.FuseCommand{
		Target: schemas.Key{Tenant: "*", Service: "chat", Model: "big", Variant: "*"},
		Action: schemas.ActionDegrade, Level: 1, State: schemas.StateOpen, Version: 1, Fallback: "small",
		IssuedAtUnixNano: now.UnixNano(), ExpiresAtUnixNano: now.Add(time.Hour).UnixNano(),
		Reasons: []schemas.Reason{{VerdictID: "v1", Text: "tail breach"}},
	}
}

// gatewayRun is the gateway's run in a goroutine, its output in out.
type gatewayRun struct {
	out    syncBuf
	cancel context.CancelFunc
	done   chan error
}

// startGateway runs the gateway with args until stop.
func startGateway(args ...string) *gatewayRun {
	ctx, cancel := context.WithCancel(context.Background())
	g := &gatewayRun{cancel: cancel, done: make(chan error, 1)}
	go func() { g.done <- run(ctx, args, &g.out) }()
	return g
}

// stop cancels the run and fails the test if it returned an error.
func (g *gatewayRun) stop(t *testing.T) {
	t.Helper()
	g.cancel()
	if err := <-g.done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

func TestGatewayExample(t *testing.T) {
	for _, client := range []string{"franz-go", "kafka-go"} {
		t.Run(client, func(t *testing.T) {
			k := startFuseTopic(t)
			publish(t, k, degradeBig())

			g := startGateway("-brokers", strings.Join(k.Brokers, ","), "-client", client, "-every", "50ms",
				"-key", "acme/chat/big/stable", "-key", "acme/chat/small/stable")
			testharness.Eventually(t, 30*time.Second, "decisions", func() bool {
				s := g.out.String()
				return strings.Contains(s, "decide acme/chat/big/stable: degrade to small") &&
					strings.Contains(s, "decide acme/chat/small/stable: allow")
			})
			g.stop(t)
			if s := g.out.String(); !strings.Contains(s, "command */chat/big/* v1: degrade level 1 state open (was none)") || !strings.Contains(s, "ready: 1 targets") {
				t.Fatalf("output:\n%s", s)
			}
		})
	}
}

func TestGatewayRefusesWithoutKeys(t *testing.T) {
	t.Setenv("FUSEBOX_FUSE_KEYS", "")
	var out syncBuf
	err := run(context.Background(), []string{"-brokers", "127.0.0.1:1"}, &out)
	if err == nil || !strings.Contains(err.Error(), "insecure-unsigned") {
		t.Fatalf("run without keys: %v", err)
	}
}

// TestGatewayExampleShowsExpired: a command read from a backlog that
// expired before the gateway read it is not applied and is shown as
// such; the default keys are the generated traffic's (the latency-tail
// incident's target), so the invocation of docs/gateways.md decides for real keys.
func TestGatewayExampleShowsExpired(t *testing.T) {
	k := startFuseTopic(t)
	issued := time.Now().Add(-time.Hour) // an hour behind, as a backlog's evaluation
	publish(t, k, schemas.FuseCommand{
		Target: schemas.Key{Tenant: "acme", Service: "chat", Model: "gpt-4o-mini", Variant: "baseline"},
		Action: schemas.ActionTrip, Level: 2, State: schemas.StateOpen, Version: 1,
		IssuedAtUnixNano: issued.UnixNano(), ExpiresAtUnixNano: issued.Add(15 * time.Minute).UnixNano(),
		Reasons: []schemas.Reason{{VerdictID: "v1", Text: "tail breach"}},
	})
	g := startGateway("-brokers", strings.Join(k.Brokers, ","), "-every", "50ms")
	testharness.Eventually(t, 30*time.Second, "the expired command shown and the default keys decided", func() bool {
		s := g.out.String()
		return strings.Contains(s, "not applied: expired 1") &&
			strings.Contains(s, "decide acme/chat/gpt-4o-mini/baseline: allow") &&
			strings.Contains(s, "decide acme/chat/gpt-4o-mini/canary: allow")
	})
	g.stop(t)
	if s := g.out.String(); strings.Contains(s, "command acme/chat/gpt-4o-mini/baseline") {
		t.Errorf("the expired command was applied:\n%s", s)
	}
}

// TestGatewayExampleProxy: with --listen the example is a fusehttp proxy
// that really degrades the commanded model on its way to the upstream.
func TestGatewayExampleProxy(t *testing.T) {
	k := startFuseTopic(t)
	publish(t, k, degradeBig())
	models := make(chan string, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b struct{ Model string }
		json.NewDecoder(r.Body).Decode(&b)
		models <- b.Model
		fmt.Fprintf(w, `{"model":%q}`, b.Model)
	}))
	defer up.Close()
	g := startGateway("--brokers", strings.Join(k.Brokers, ","), "--listen", "127.0.0.1:0", "--upstream", up.URL)
	var addr string
	testharness.Eventually(t, 30*time.Second, "the proxy listening", func() bool {
		_, rest, ok := strings.Cut(g.out.String(), "proxy: listening on ")
		addr, _, _ = strings.Cut(rest, ",")
		return ok && strings.Contains(rest, ",")
	})
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/chat/completions", strings.NewReader(`{"model":"big","messages":[]}`))
	req.Header.Set("X-Fusebox-Tenant", "acme")
	req.Header.Set("X-Fusebox-Service", "chat")
	req.Header.Set("X-Fusebox-Variant", "stable")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if m := <-models; m != "small" || resp.Header.Get("X-Fusebox-Decision") != "degrade" {
		t.Fatalf("upstream got model %q, decision %q; want small, degrade", m, resp.Header.Get("X-Fusebox-Decision"))
	}
	resp, err = http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `fusebox_gateway_requests_total{decision="degrade"} 1`) {
		t.Fatalf("/metrics:\n%s", body)
	}
	g.stop(t)
}

// TestMain runs the test binary as the gateway itself when
// FUSEBOX_TEST_AS_MAIN=1 (a test starting it as a process).
func TestMain(m *testing.M) {
	if os.Getenv("FUSEBOX_TEST_AS_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	testharness.Main(m)
}

// TestGatewayCommandLine runs the gateway as a process: -h and --help
// print the flags (spelt --flag) to stdout and exit 0 (it exited 1), a
// misspelt flag prints one line to stderr and exits 2.
func TestGatewayCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"-h"}, 0, "--brokers", ""},
		{[]string{"--help"}, 0, "--insecure-unsigned", ""},
		{[]string{"--brokr", "x"}, 2, "", "gateway: flag provided but not defined: --brokr; see gateway -h\n"},
		{[]string{"--client", "sarama", "--insecure-unsigned"}, 2, "", "--client"},
	} {
		cmd := exec.Command(os.Args[0], tc.args...)
		cmd.Env = append(os.Environ(), "FUSEBOX_TEST_AS_MAIN=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("gateway %v: exit %d, stdout %q, stderr %q; want exit %d, %q on stdout and %q on stderr",
				tc.args, code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
		}
		if tc.code != 0 && strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("gateway %v: stderr is not one line: %q", tc.args, stderr.String())
		}
		if tc.code == 0 && (stderr.Len() != 0 || regexp.MustCompile(`\n  -[a-z]`).MatchString(stdout.String())) {
			t.Errorf("gateway %v: stderr %q, or a flag spelt -flag in %q", tc.args, stderr.String(), stdout.String())
		}
	}
}
