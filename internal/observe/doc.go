// Package observe is what `fusebox run` and `fusebox demo` serve about
// themselves: Prometheus metrics on /metrics, /healthz, /readyz and, behind
// a flag, /debug/pprof; and the structured JSON logs (NewLogger).
//
// The pipeline supplies its numbers through Source: on every scrape each
// source fills a Snapshot of plain structs, which a custom
// prometheus.Collector turns into the fusebox_* metrics (see Families for
// names and labels). The registry is private — nothing touches
// Prometheus's global default registry — and observe imports no pipeline
// package: cmd adapts ingest, engine and sinks to Source.
//
//	srv, err := observe.Serve(ctx, "127.0.0.1:9464", observe.Options{
//		Sources: []observe.Source{observe.SourceFunc(func(s *observe.Snapshot) {
//			st := consumer.Stats()
//			for topic, n := range st.RecordsIn {
//				s.RecordsIn = append(s.RecordsIn, observe.TopicCount{Topic: topic, Count: n})
//			}
//		})},
//		Ready: func() error { return pipeline.Ready() },
//	})
package observe
