// Package observe is what `fusebox run` and `fusebox demo` serve about
// themselves: Prometheus metrics on /metrics, /healthz, /readyz and, behind
// a flag, /debug/pprof; and the structured JSON logs (NewLogger).
//
// The pipeline supplies its numbers through Source: on every scrape each
// source fills a Snapshot of plain structs — the fixed families (see
// Families for names and labels) plus Extra samples a source names itself
// — which a custom prometheus.Collector turns into the fusebox_* metrics.
// The registry is private — nothing touches Prometheus's global default
// registry — and observe imports no other fusebox package: package
// pipeline adapts ingest, the engine and the sinks to a Source
// (Pipeline.Metrics) and its readiness to Options.Ready (Pipeline.Ready);
// `fusebox run` passes both to Serve (the demo serves nothing: http.listen
// is "" in its SLO file).
//
//	srv, err := observe.Serve(ctx, "127.0.0.1:9464", observe.Options{
//		Sources: []observe.Source{p.Metrics()}, // p a *pipeline.Pipeline
//		Ready:   p.Ready,
//	})
package observe
