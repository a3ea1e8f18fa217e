package main

import (
	"flag"
	"strings"

	"github.com/fusebox-dev/fusebox/internal/config"
)

// envConfig names the SLO file when `fusebox run` has no --config.
const envConfig = "FUSEBOX_CONFIG"

// runOverride is a setting of the SLO file that `fusebox run` also takes
// from a flag and an environment variable: flag over variable over file.
type runOverride struct {
	flag, env, field, usage string
	apply                   func(f *config.File, v string)
}

// runOverrides are the settings that differ between the places one
// deployment's file runs (a laptop, staging, a pod): where Kafka and
// ClickHouse are, where to listen, how much to log.
var runOverrides = []runOverride{
	{"brokers", "FUSEBOX_BROKERS", "kafka.brokers", "Kafka seed `host:port,...`",
		func(f *config.File, v string) { f.Kafka.Brokers = splitList(v) }},
	{"clickhouse", "FUSEBOX_CLICKHOUSE", "sinks.clickhouse.addr", "ClickHouse native-protocol `host:port,...` (turns the ClickHouse sink on)",
		func(f *config.File, v string) { f.Sinks.ClickHouse.Addr = splitList(v) }},
	{"listen", "FUSEBOX_LISTEN", "http.listen", "`host:port` of /metrics, /healthz and /readyz (\"\" for none)",
		func(f *config.File, v string) { f.HTTP.Listen = v }},
	{"log-level", "FUSEBOX_LOG_LEVEL", "log.level", "log `level`: debug, info, warn or error",
		func(f *config.File, v string) { f.Log.Level = v }},
}

// runConfigOverrides returns the overrides that apply: for each setting,
// its flag when given on the command line (even empty), else its
// environment variable when set and not empty. lookupEnv is os.LookupEnv
// (a parameter for tests).
func runConfigOverrides(fs *flag.FlagSet, lookupEnv func(string) (string, bool)) []config.Override {
	set := map[string]string{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = f.Value.String() })
	var out []config.Override
	for _, o := range runOverrides {
		v, src := "", ""
		if fv, ok := set[o.flag]; ok {
			v, src = fv, "--"+o.flag
		} else if ev, ok := lookupEnv(o.env); ok && ev != "" {
			v, src = ev, "$"+o.env
		} else {
			continue
		}
		apply := o.apply
		out = append(out, config.Override{Field: o.field, Source: src, Apply: func(f *config.File) { apply(f, v) }})
	}
	return out
}

// splitList splits a comma-separated list, dropping spaces and empties.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
