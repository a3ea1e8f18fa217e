package schemas

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// EvalSummary is what one keyed partition's worker judged of one SLO at
// one evaluation boundary: every key it evaluated, with the key's status
// and whether the per-key breaker tripped it there. The incident stage
// (processors/incident) merges the summaries of every keyed partition for
// (SLO, boundary) and attributes the breaches to a dimension. A worker
// writes one at every boundary it evaluates an SLO, with no Keys when it
// has none, so that the stage knows the partition is done with that
// boundary; a boundary a worker skipped (no processor held state, see
// Worker.jumpEmpty) has no summary, and a later summary of the same
// partition says it had nothing there (a worker's summaries of one SLO
// come in boundary order).
type EvalSummary struct {
	SLO       string
	Processor string
	// AtUnixNano is the evaluation boundary (the verdicts' window end).
	AtUnixNano int64
	// Partition is the keyed partition of the worker that wrote it.
	Partition int32
	// Keys are the keys with a verdict other than insufficient_data, in
	// key order.
	Keys []SummaryKey
	// Commands are, for an SLO whose commands the incident stage writes
	// (WorkerConfig.AttributedSLOs), the per-key breaker's commands for
	// it at the boundary (unsigned): the stage passes or suppresses them
	// instead of the worker writing them.
	Commands []FuseCommand
}

// SummaryKey is one key of an EvalSummary.
type SummaryKey struct {
	Key Key
	// Status is the key's worst status among the SLO's verdicts at the
	// boundary (breach > warn > ok); insufficient_data keys are left out.
	Status Status
	// Tripped is set when the per-key breaker issued a trip (an open
	// command) for a target holding this key at the boundary.
	Tripped bool
}

// IncidentStatus is where an incident is in its life.
type IncidentStatus string

const (
	// IncidentOpened: the first record of an incident.
	IncidentOpened IncidentStatus = "opened"
	// IncidentGrowing: more breaching keys carry the value than at the
	// previous record.
	IncidentGrowing IncidentStatus = "growing"
	// IncidentOngoing: still attributed, no more breaching keys.
	IncidentOngoing IncidentStatus = "ongoing"
	// IncidentResolving: no longer attributed at this evaluation; closes
	// after the stage's close_after such evaluations in a row.
	IncidentResolving IncidentStatus = "resolving"
	// IncidentClosed: the last record of an incident.
	IncidentClosed IncidentStatus = "closed"
)

// The attribution levels an incident may name besides a key dimension.
const (
	// DimProvider is the provider of the key's model (gen_ai.provider.name).
	DimProvider = "provider"
	// DimKey: one key alone breaches, its per-key breaker tripped it.
	DimKey = "key"
)

// Incident is one record of an incident: the breaches of one SLO,
// attributed to the dimension value that explains them. A record is
// written at every evaluation the incident is open (its status says how
// it evolves), each with its own ID.
type Incident struct {
	// ID identifies this record: hash of IncidentID and AtUnixNano.
	ID string
	// IncidentID is the incident's id, shared by all of its records: hash
	// of SLO, Dimension, Value and FirstUnixNano (see IncidentIDOf).
	IncidentID string
	SLO        string
	Processor  string
	// Dimension is tenant, service, model, variant, provider or key; Value
	// is the attributed value (for key: the key's String form).
	Dimension, Value string
	Status           IncidentStatus
	// Breaching and Healthy count the keys carrying the value that
	// breach and that do not (ok or warn) at AtUnixNano; OtherBreaching
	// and OtherHealthy the keys of the SLO without it.
	Breaching, Healthy           int64
	OtherBreaching, OtherHealthy int64
	// PValue is the one-sided Fisher exact test's p-value of the value,
	// Holm-adjusted over the values tested at the evaluation that opened
	// or last confirmed the incident; 1 for a key-level incident (nothing
	// is tested).
	PValue float64
	// FirstUnixNano is the evaluation that opened the incident,
	// LastUnixNano the last one that attributed breaches to it, AtUnixNano
	// this record's evaluation.
	FirstUnixNano, LastUnixNano, AtUnixNano int64
	// Keys are the breaching keys carrying the value at AtUnixNano, in key
	// order, at most the stage's max_keys (the count is Breaching).
	Keys []Key
	// Partial marks a record of a boundary decided without every keyed
	// partition's summary (one lagged by more than the stage's max_wait
	// evaluations): its counts miss that partition's keys.
	Partial bool
	// MergedInto is, on the closing record of a key incident, the
	// IncidentID of the incident that explained it when that opened.
	MergedInto    string
	ConfigVersion string
}

// IncidentIDOf is the hex SHA-256 (first 16 bytes) of the SLO, the
// attributed dimension and value and the evaluation that opened the
// incident: a replay opens the same incident with the same id.
func IncidentIDOf(slo, dimension, value string, firstUnixNano int64) string {
	return hashStrings(firstUnixNano, slo, dimension, value)
}

// IncidentRecordID is the id of the incident's record at atUnixNano.
func IncidentRecordID(incidentID string, atUnixNano int64) string {
	return hashStrings(atUnixNano, "incident-record", incidentID)
}

func hashStrings(t int64, ss ...string) string {
	h := sha256.New()
	for _, s := range ss {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t))
	h.Write(b[:])
	sum := h.Sum(nil)
	return hex.EncodeToString(sum[:16])
}
