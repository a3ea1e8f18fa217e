// Package deploy holds the deployment files of docker-compose.yml — the
// fusebox configuration (fusebox.yaml), the OpenTelemetry Collector's
// (otel-collector.yaml), the Prometheus alert rules and config
// (prometheus/), the Grafana dashboard and its provisioning (grafana/) —
// and the tests that check that the compose file, these files and fusebox's
// code agree: promtool checks and unit-tests the rules, and every query of
// the dashboard runs against ClickHouse. It has no code of its own.
package deploy
