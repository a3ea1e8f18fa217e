// Package incident is the incident stage: it merges the evaluation
// summaries (schemas.EvalSummary) of every keyed partition for one SLO and
// one evaluation boundary, attributes the breaching keys to the dimension
// value that explains them, and follows each attribution as an incident
// (schemas.Incident: opened, growing, ongoing, resolving, closed). It
// imports stats and schemas; it reads no clock and does no I/O.
//
// # Completeness and determinism
//
// A keyed partition's worker writes its summaries of one SLO in boundary
// order, one at every boundary it evaluates (also without keys) and none
// at the boundaries it jumps over because it holds no state. So once a
// partition's newest summary of an SLO is at T' >= T, the partition has
// said everything it will say about T. The stage decides (SLO, T) when
// every one of Config.Partitions has reached T, and decides the
// boundaries of an SLO in order: what it decides depends only on the set
// of summaries per boundary, not on how the partitions' summaries
// interleave, nor on which process wrote them. A summary of a decided
// boundary, or a second one of one partition and boundary (a worker's
// replay after a restart), is dropped (Stats.Duplicates). The stage's
// state (the undecided boundaries, the partitions' progress, the
// incidents) is in its snapshot (MarshalBinary).
//
// # Attribution (at one decided boundary)
//
// N is the SLO's keys with a verdict other than insufficient_data, B the
// breaching ones. A candidate is a value of one dimension (model,
// provider, tenant, service, variant) or a pair of key dimensions (model
// and variant: one model's canary; tenant and model, ...). For each
// candidate v with n_v keys of which b_v >= Config.MinKeys breach, the
// one-sided Fisher exact test of "breaches concentrate on v":
//
//	p_v = P[X >= b_v],  X ~ Hypergeometric(N, B, n_v)
//
// (stats.HypergeomUpperTail), Holm-adjusted over every candidate tested at
// the boundary (stats.Holm): the family-wise error rate is Config.Alpha
// over the values tested. Which values are tested (those with MinKeys
// breaching keys) is itself chosen from the data, so this is a screen,
// not an exact level: a value with fewer breaching keys is never tested. A candidate is significant when its
// adjusted p-value is below Alpha and its purity b_v/n_v is at least
// Config.MinPurity. The breaches are then explained greedily: the
// significant candidate covering the most still-unexplained breaching
// keys (ties: the higher purity; then one dimension before a pair; then
// model, provider, tenant, service, variant; then the value) takes them,
// and so on while one covers at least MinKeys. So a slow model is
// "model=X", not "provider=P" when the provider has healthy models, and
// not "tenant=T" for each tenant; a model's bad canary is
// "model,variant=X,canary" (purer than "model=X"); two overlapping
// incidents of different levels are two attributions.
//
// Breaching keys no candidate explains are left to the per-key breaker:
// a key whose breaker tripped (SummaryKey.Tripped) and that no open
// incident covers opens an incident of dimension "key" (PValue 1: nothing
// was tested), so every trip belongs to an incident.
//
// # Life of an incident
//
// An attribution opens an incident once it has been found at
// Config.OpenAfter consecutive decided boundaries (default 2: the
// per-key breaker trips at the 3rd breach); the incident's id is
// schemas.IncidentIDOf(SLO, dimension, value, opening boundary). While
// found it is growing (more breaching keys than at its previous record) or
// ongoing; a boundary that does not find it makes it resolving, and
// Config.CloseAfter such boundaries in a row (default 3) close it. A key
// incident is found while its key breaches. One record per open incident
// per decided boundary.
package incident
