// Package fusehttp is net/http middleware that applies fusebox's fuse
// commands to an OpenAI-compatible proxy: POST /v1/chat/completions,
// /v1/responses and /v1/embeddings (WithPaths).
//
//	client, _ := fuse.NewClient(fuse.WithBrokers("kafka:9092"), fuse.WithKeyring(ring))
//	go client.Run(ctx)
//	client.WaitReady(ctx)
//	var counts fusehttp.Counters
//	mw, err := fusehttp.New(client, fusehttp.WithMetrics(&counts))
//	proxy := httputil.NewSingleHostReverseProxy(providerURL)
//	proxy.FlushInterval = -1 // stream SSE chunks as they come
//	http.Handle("/v1/", mw.Handler(proxy))
//	http.Handle("/metrics/gateway", &counts)
//
// # The key
//
// Each judged request's key (tenant, service, model, variant) comes from
// the headers named by WithHeaders (DefaultHeaders: X-Fusebox-Tenant,
// X-Fusebox-Service, X-Fusebox-Model, X-Fusebox-Variant) over
// WithDefaultKey's values, the model from its header or else the JSON
// body's top-level "model"; or from a WithKeyFunc callback. The body is
// read once, at most WithMaxBodyBytes (default 8 MiB; a larger one is
// answered 413, never passed unjudged), and restored for the upstream. A
// request without a usable key (no model, a body that is not JSON, a
// callback error) is passed as asked and counted LabelUnkeyed: gateways
// fail open, as package fuse does when fusebox says nothing.
//
// # The decision
//
// fuse.Client.Decide's answer is applied as follows:
//
//   - no command in effect: passed (LabelPass);
//   - degrade: the body's "model" rewritten to the command's fallback
//     (and the model header, when the request had one), Content-Length
//     fixed (LabelDegrade);
//   - trip (reject): 503 with Retry-After = the seconds until the
//     command expires, rounded up, at least 1 (fusebox refreshes a
//     command of a target still open before then) and an OpenAI-style
//     error {"error":{"message","type":"server_error","code":"circuit_open"}}
//     (LabelReject); with WithFailover, sent to the model it names instead
//     (LabelFailover);
//   - throttle: the admitted fraction passed (LabelAdmit), the rest 429
//     with Retry-After: 1 and code "rate_limit_exceeded" (LabelThrottle);
//   - half-open: the probe fraction passed as asked (LabelProbe), so
//     fusebox judges the target's recovery on real traffic; the rest get
//     the command's action (503, or the degrade);
//   - rollback: the variant header set to the baseline (the command's
//     fallback, else WithBaseline, default "baseline"), and with
//     WithRollbackModel the body's model rewritten (LabelRollback).
//
// Fractions are resolved with a sample per request in [0, 1): the FNV-1a
// hash of the request id header (WithRequestIDHeader, default
// X-Request-Id: a retried request gets the same answer), else the next
// value of the sequence n·φ mod 1 (deterministic, and the admitted share
// is the fraction within one request), or WithSampler's. Never the global
// math/rand.
//
// The handler behind gets the response writer unwrapped (streamed
// responses flush as the upstream writes them), the header
// X-Fusebox-Decision on the response, and Applied in the request context
// (FromContext): the key as sent, e.g. for the span the gateway exports.
//
// # Metrics
//
// Every judged request is counted once by Label through the Metrics
// interface (WithMetrics): Counters is a ready implementation serving the
// Prometheus text format (metric fusebox_gateway_requests_total, label
// decision); a Prometheus CounterVec takes a two-line adapter. The package
// imports nothing of fusebox but fuse and fuseschema (the fuse module).
package fusehttp
