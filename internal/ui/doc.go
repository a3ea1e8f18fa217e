// Package ui is fusebox's live page: a small HTML/JS/CSS page embedded in
// the binary (go:embed; no network, no CDN, charts drawn as SVG by its own
// script) and the JSON API it polls, both served on the observability
// listener (http.listen) when http.ui is on.
//
//	GET /                 redirects to /ui/
//	GET /ui/              the page (index.html, app.js, style.css)
//	GET /api/ui/keys      the keys seen, the store's limits and counters
//	GET /api/ui/key?tenant=T&service=S&model=M&variant=V
//	                      every series of one key: points over event time
//	                      and the latest verdict's details and evidence
//	GET /api/ui/fuse      the fuse commands per target (the fuse timeline)
//	GET /api/ui/tenants?objective=O
//	                      the tenant SLO health matrix of what the store
//	                      holds: per tenant and SLO, compliance, error
//	                      budget left at objective O (default 0.999),
//	                      breaches and incidents (TenantsResponse)
//
// The data come from a Store, an extra sink of the pipeline: it keeps the
// recent verdicts and fuse commands in memory, bounded (Config): at most
// MaxSeries series (processor, SLO, metric, key) of MaxPoints points each,
// and MaxTargets targets of MaxCommands commands each; the least recently
// updated series or target makes room for a new one (counted as dropped).
// With the defaults a full store holds about 10 MiB of heap (measured by
// TestStoreMemoryBounded), whatever the traffic.
package ui
