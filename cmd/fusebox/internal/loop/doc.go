// Package loop closes fusebox's loop over HTTP: users send OpenAI-style
// requests through a gateway built on fuse/fusehttp to simulated providers
// that carry scripted incidents (the kinds of internal/sim/traffic: a latency
// tail, an error burst, a canary's confidence drift); the gateway exports an OTLP span of every call it
// forwards (GenAI semantic conventions, as schemas encodes them) to the
// span topic; fusebox's pipeline judges them and publishes signed fuse
// commands; the gateway's fuse.Client follows the fuse topic and the
// middleware really routes the failing model's traffic to the fallback
// (or the canary's to the baseline). Half-open probes are shadowed: the
// user gets the fallback's answer, a copy goes to the failing model.
//
// Run drives one scenario over wall-clock time (scaled down: 1 s
// evaluations, windows of seconds) twice at once on one broker — with the
// loop, and without it (the same gateway whose middleware never gets a
// command) — and reports, per incident, the users' SLO (P99.9, error rate,
// compliance) and the failing provider's, as its direct traffic sees it.
// `fusebox bench loop` prints the report; the package's test asserts it.
package loop
