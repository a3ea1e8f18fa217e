// Package deploy holds the deployment files of docker-compose.yml — the
// fusebox configuration (fusebox.yaml) and the OpenTelemetry Collector's
// (otel-collector.yaml) — and the test that checks that the compose file,
// these files and fusebox's defaults agree. It has no code of its own.
package deploy
