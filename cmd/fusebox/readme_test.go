package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/fusebox-dev/fusebox/internal/config"
)

// The manual's pages these tests hold to the code (relative to this
// package).
const (
	cliDoc     = "../../docs/cli.md"     // the flag tables
	runningDoc = "../../docs/running.md" // the Collector section
)

// docsText is README.md and every page of docs/, concatenated: every
// `fusebox CMD --flag` written anywhere in them must be a real flag.
func docsText(t *testing.T) string {
	t.Helper()
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var s strings.Builder
	for _, p := range append([]string{"../../README.md"}, pages...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s.Write(b)
		s.WriteString("\n")
	}
	return s.String()
}

// TestREADMEDocumentsEveryFlag: docs/cli.md has, per command (and config
// subcommand, bench study), a table whose flags are exactly those the
// command's -h lists, spelt --flag; and every `fusebox CMD --flag` the
// README and docs/ write elsewhere is a flag CMD has.
func TestREADMEDocumentsEveryFlag(t *testing.T) {
	b, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	flagLine := regexp.MustCompile(`(?m)^  --([a-z0-9-]+)`)
	rowFlag := regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)")
	all := map[string][]string{}
	for _, cmd := range helpTargets() {
		name := strings.Join(cmd, " ")
		_, stdout, _ := runCmd(t, append(slices.Clone(cmd), "-h")...)
		for _, m := range flagLine.FindAllStringSubmatch(stdout, -1) {
			all[name] = append(all[name], m[1])
		}
		if len(all[name]) == 0 {
			continue // config, bench: their subcommands have the flags
		}
		// The command's table: from its heading, the usage line of its
		// -h, to the next heading.
		usage := strings.TrimPrefix(strings.SplitN(stdout, "\n", 2)[0], "Usage: ")
		head := "\n### `" + usage + "`\n"
		i := strings.Index(readme, head)
		if i < 0 {
			t.Errorf("%s has no heading %q", cliDoc, strings.TrimSpace(head))
			continue
		}
		loc := []int{i, i + len(head)}
		sec := readme[loc[1]:]
		if i := strings.Index(sec, "\n#"); i >= 0 {
			sec = sec[:i]
		}
		var documented []string
		for _, m := range rowFlag.FindAllStringSubmatch(sec, -1) {
			documented = append(documented, m[1])
		}
		for _, f := range all[name] {
			if !slices.Contains(documented, f) {
				t.Errorf("fusebox %s --%s is not in its table in %s", name, f, cliDoc)
			}
		}
		for _, f := range documented {
			if !slices.Contains(all[name], f) {
				t.Errorf("the table of fusebox %s in %s lists --%s, which it does not have", name, cliDoc, f)
			}
		}
	}
	// The invocations of the README and docs/ name real flags.
	inv := regexp.MustCompile("fusebox (run|demo|gen|calibrate|report|spans|migrate|broker|config check|config diff|openslo export|openslo import|bench tail-accuracy|bench false-trips|bench sequential|bench drift-peers|bench loop)((?: [^`\\n]*)?)")
	for _, m := range inv.FindAllStringSubmatch(docsText(t), -1) {
		for _, f := range regexp.MustCompile(`(?:^| )--([a-z0-9-]+)`).FindAllStringSubmatch(m[2], -1) {
			if !slices.Contains(all[m[1]], f[1]) {
				t.Errorf("the docs write %q: fusebox %s has no --%s", strings.TrimSpace(m[0]), m[1], f[1])
			}
		}
	}
}

// TestREADMECollectorExporter: the Collector exporter settings of
// docs/running.md agree with what fusebox reads by default — the span
// topic, an encoding it decodes, messages within its size limit, a SASL
// mechanism its client has — and use the same keys as deploy/otel-collector.yaml (the compose
// Collector, which deploy_test checks against the compose stack) where
// both set one.
func TestREADMECollectorExporter(t *testing.T) {
	b, err := os.ReadFile(runningDoc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n## An OpenTelemetry Collector outside compose\n")
	if i < 0 {
		t.Fatal(runningDoc + " has no Collector section")
	}
	s = s[i:]
	j := strings.Index(s, "```yaml\n")
	k := strings.Index(s[j+8:], "```")
	if j < 0 || k < 0 {
		t.Fatal("the Collector section has no yaml block")
	}
	type exporter struct {
		Brokers []string `yaml:"brokers"`
		Traces  struct {
			Topic    string `yaml:"topic"`
			Encoding string `yaml:"encoding"`
		} `yaml:"traces"`
		Auth struct {
			SASL struct {
				Mechanism string `yaml:"mechanism"`
			} `yaml:"sasl"`
		} `yaml:"auth"`
		Producer struct {
			MaxMessageBytes int `yaml:"max_message_bytes"`
		} `yaml:"producer"`
	}
	var readme struct {
		Exporters struct {
			Kafka map[string]any `yaml:"kafka"`
		} `yaml:"exporters"`
	}
	var typed struct {
		Exporters struct {
			Kafka exporter `yaml:"kafka"`
		} `yaml:"exporters"`
	}
	block := []byte(s[j+8 : j+8+k])
	if err := yaml.Unmarshal(block, &readme); err != nil {
		t.Fatalf("the Collector config of %s is not YAML: %v", runningDoc, err)
	}
	if err := yaml.Unmarshal(block, &typed); err != nil {
		t.Fatal(err)
	}
	e := typed.Exporters.Kafka
	def := config.Default()
	if !slices.Contains(def.Topics.Spans, e.Traces.Topic) {
		t.Errorf("traces.topic %q is not fusebox's default span topic %v", e.Traces.Topic, def.Topics.Spans)
	}
	if e.Traces.Encoding != "otlp_proto" && e.Traces.Encoding != "otlp_json" {
		t.Errorf("traces.encoding %q: fusebox decodes otlp_proto and otlp_json", e.Traces.Encoding)
	}
	if m := e.Producer.MaxMessageBytes; m <= 0 || m > def.Limits.MaxMessageBytes {
		t.Errorf("producer.max_message_bytes %d: want at most fusebox's limits.max_message_bytes %d", m, def.Limits.MaxMessageBytes)
	}
	if !slices.Contains([]string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, e.Auth.SASL.Mechanism) {
		t.Errorf("auth.sasl.mechanism %q is not one fusebox's client supports", e.Auth.SASL.Mechanism)
	}
	cb, err := os.ReadFile("../../deploy/otel-collector.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Exporters struct {
			Kafka map[string]any `yaml:"kafka"`
		} `yaml:"exporters"`
	}
	if err := yaml.Unmarshal(cb, &compose); err != nil {
		t.Fatal(err)
	}
	for key, v := range compose.Exporters.Kafka {
		if _, ok := readme.Exporters.Kafka[key]; !ok {
			t.Errorf("deploy/otel-collector.yaml sets exporters.kafka.%s, the one in docs/running.md does not", key)
		}
		if sub, ok := v.(map[string]any); ok {
			rsub, _ := readme.Exporters.Kafka[key].(map[string]any)
			for sk := range sub {
				if _, ok := rsub[sk]; !ok {
					t.Errorf("deploy/otel-collector.yaml sets exporters.kafka.%s.%s, the one in docs/running.md does not", key, sk)
				}
			}
		}
	}
}
