package demo

import (
	"fmt"
	"os"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
)

// setDefaults fills in o's defaults (now: the demo's start, for the JSONL
// file's name) and returns the scenario to play; an error for a speedup
// that is not positive or a negative duration.
func (o *Options) setDefaults(now time.Time) (traffic.Scenario, error) {
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Speedup == 0 {
		o.Speedup = DefaultSpeedup
	}
	if !(o.Speedup > 0) {
		return traffic.Scenario{}, fmt.Errorf("demo: speedup %v: must be positive", o.Speedup)
	}
	if o.RedrawEvery <= 0 {
		o.RedrawEvery = time.Second
	}
	if o.Duration < 0 {
		return traffic.Scenario{}, fmt.Errorf("demo: duration %v: must not be negative", o.Duration)
	}
	sc := Scenario()
	if o.Scenario != nil {
		sc = *o.Scenario
	}
	if o.Seed != 0 {
		sc.Seed = o.Seed
	}
	if o.Start.IsZero() {
		o.Start = time.Now().UTC().Truncate(time.Minute)
	}
	if o.JSONL == "" {
		o.JSONL = defaultJSONL(now)
	}
	return sc, nil
}

// sloFile is the built-in SLO file (Config) on the embedded broker at
// brokerAddr, with o's JSONL file, HTTP address, live page and ClickHouse
// server.
func (o *Options) sloFile(brokerAddr string) (*config.File, error) {
	cfg, err := Config(brokerAddr)
	if err != nil {
		return nil, err
	}
	cfg.Sinks.JSONL.Path = o.JSONL
	switch o.HTTP {
	case "":
	case "off":
		cfg.HTTP.Listen, cfg.HTTP.UI = "", false
	default:
		cfg.HTTP.Listen = o.HTTP
	}
	if o.NoUI {
		cfg.HTTP.UI = false
	}
	if o.ClickHouse != "" {
		ch := &cfg.Sinks.ClickHouse
		ch.Addr = []string{o.ClickHouse}
		if o.ClickHouseDatabase != "" {
			ch.Database = o.ClickHouseDatabase
		}
		if o.ClickHouseUser != "" {
			ch.Username = o.ClickHouseUser
		}
		ch.Password = o.ClickHousePassword
	}
	return cfg, nil
}
