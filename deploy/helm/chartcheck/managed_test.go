package chartcheck

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestConfigMayNotSetChartManagedKeys: `config` setting a key the chart
// sets from its values fails the render, naming the key and the value to
// set instead — also when the chart's value is false or the section is
// off (mergeOverwrite would have kept config's true, or passed the key
// through) — while sinks.clickhouse's other keys pass, and
// clickhouse.migrate=false reaches the config file.
func TestConfigMayNotSetChartManagedKeys(t *testing.T) {
	ch := []string{"clickhouse.enabled=true", "clickhouse.addr={ch:9000}"}
	for _, c := range []struct {
		set  []string
		want string
	}{
		{append(ch, "clickhouse.migrate=false", "config.sinks.clickhouse.migrate=true"),
			"config.sinks.clickhouse.migrate: set by the chart from the value clickhouse.migrate"},
		{[]string{"config.sinks.clickhouse.addr={ch:9000}"}, "config.sinks.clickhouse.addr: set by the chart from the value clickhouse.addr"},
		{[]string{"config.sinks.clickhouse.password=secret"}, "config.sinks.clickhouse.password: set by the chart from the value clickhouse.existingSecret"},
		{[]string{"config.kafka.brokers={other:9092}"}, "config.kafka.brokers: set by the chart from the value kafka.brokers"},
		{[]string{"config.kafka.tls.enabled=false"}, "config.kafka.tls: set by the chart from the value kafka.tls"},
		{[]string{"config.topics.keyed_partitions=6"}, "config.topics.keyed_partitions: set by the chart from the value kafka.keyedPartitions"},
		{[]string{"config.signing.insecure_unsigned=true"}, "config.signing.insecure_unsigned: set by the chart from the value signing.insecureUnsigned"},
		{[]string{"config.http.listen=127.0.0.1:9464"}, "config.http.listen: set by the chart from the value port"},
	} {
		_, err := Render(chartDir, Release{Set: c.set})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--set %v: error %v, want one saying %q", c.set, err, c.want)
		}
	}

	_, objs := rendered(t, Release{Set: append(ch, "clickhouse.migrate=false", "config.sinks.clickhouse.batch_rows=100",
		"config.kafka.client_id=fb", "config.http.pprof=true")})
	var f struct {
		Kafka struct {
			ClientID string `json:"client_id"`
		} `json:"kafka"`
		Sinks struct {
			ClickHouse map[string]any `json:"clickhouse"`
		} `json:"sinks"`
		HTTP struct {
			Listen string `json:"listen"`
			Pprof  bool   `json:"pprof"`
		} `json:"http"`
	}
	cfg := configFile(t, objs)
	if err := yaml.Unmarshal([]byte(cfg), &f); err != nil {
		t.Fatal(err)
	}
	if m, ok := f.Sinks.ClickHouse["migrate"]; !ok || m != false {
		t.Errorf("clickhouse.migrate=false: sinks.clickhouse.migrate %v (set %v), want false\n%s", m, ok, cfg)
	}
	if f.Sinks.ClickHouse["batch_rows"] != float64(100) || f.Kafka.ClientID != "fb" || !f.HTTP.Pprof || f.HTTP.Listen != "0.0.0.0:9464" {
		t.Errorf("config's own keys beside the chart's: want batch_rows 100, client_id fb, pprof true, listen 0.0.0.0:9464:\n%s", cfg)
	}
	if _, objs := rendered(t, Release{}); strings.Contains(configFile(t, objs), "clickhouse") {
		t.Errorf("clickhouse.enabled=false: the config file has a clickhouse section:\n%s", configFile(t, objs))
	}
}
