// Package testharness starts the real services integration tests talk to:
// a franz-go kfake Kafka-protocol broker in-process, and a ClickHouse server
// (FUSEBOX_CLICKHOUSE_ADDR, else clickhouse-server from PATH on free loopback
// ports, else testcontainers where a Docker engine answers).
//
// Every integration test in the module uses it, so there is one place that
// knows how to bring the services up and down.
package testharness
