package fuseschema

// Action is what a fuse command tells a gateway to do for its target.
type Action string

const (
	ActionTrip     Action = "trip"      // stop sending to the target; fail over (level 2)
	ActionHalfOpen Action = "half_open" // let a trickle through to probe recovery
	ActionClose    Action = "close"     // back to normal
	ActionDegrade  Action = "degrade"   // route to the fallback model (level 1)
	ActionThrottle Action = "throttle"  // admit only a fraction of requests
	ActionRollback Action = "rollback"  // move canary traffic back to the baseline
	ActionScaleOut Action = "scale_out" // add capacity
)

// BreakerState is the state of a target's breaker after the command.
type BreakerState string

const (
	StateClosed   BreakerState = "closed"
	StateOpen     BreakerState = "open"
	StateHalfOpen BreakerState = "half_open"
)

// Reason ties a command to a verdict that caused it.
type Reason struct {
	VerdictID string
	Text      string
}

// FuseCommand is what the breaker tells gateways about one target. Gateways
// keep the newest version per target and verify the signature before acting.
//
// The canonical byte form (MarshalJSON, CanonicalBytes: the bytes that are
// signed) is defined in codec.go and documented with
// fuse_command.v1.schema.json; package fuse signs and verifies.
type FuseCommand struct {
	// Target is the key or coarser target the command applies to; a
	// dimension equal to Wildcard covers every value.
	Target Key
	Action Action
	// Level orders the severity of actions: 0 normal, 1 degrade, 2 trip.
	Level int
	State BreakerState
	// Version increases by one with every command for the target. Gateways
	// order a target's commands by (IssuedAtUnixNano, Version), see
	// CompareFuseOrder: the version breaks ties of one issued-at.
	Version uint64
	// IssuedAtUnixNano is the event time of the evaluation that issued it.
	IssuedAtUnixNano int64
	// ExpiresAtUnixNano is when a gateway stops honouring it if no newer
	// command came.
	ExpiresAtUnixNano int64
	// Fallback names the model to degrade to (ActionDegrade; for
	// ActionRollback, optionally the baseline variant) and ThrottleFraction
	// the share of requests still admitted as requested (ActionThrottle,
	// and the probe share of any command in StateHalfOpen).
	Fallback         string
	ThrottleFraction float64
	Reasons          []Reason
	CorrelationIDs   []string
	// KeyID names the HMAC key that made Signature ("" when unsigned).
	KeyID     string
	Signature string
}

// CompareFuseOrder orders two commands of one target as the fuse contract
// does: by issued-at (Unix ns of the evaluation that issued it), then by
// version. It returns -1, 0 or +1 for a before, equal to or after b. A
// gateway applies a command only when it is after the one it holds for
// the target — or when the one it holds has expired at its clock: an
// expired command no longer counts for ordering, so one command with an
// absurd version (2^64−1) blocks nothing once it expires, and it blocks
// nothing issued after it even before that. fusebox's commands of one
// target are strictly increasing in this order, across restarts too:
// issued-at is event time, which a restarted run continues from its
// checkpoint (or, having lost it, from the newer records it reads), and
// versions only break ties of one evaluation time (the breaker's versions
// grow by one per command, from a base derived from event time).
func CompareFuseOrder(a, b *FuseCommand) int {
	switch {
	case a.IssuedAtUnixNano != b.IssuedAtUnixNano:
		if a.IssuedAtUnixNano < b.IssuedAtUnixNano {
			return -1
		}
		return 1
	case a.Version != b.Version:
		if a.Version < b.Version {
			return -1
		}
		return 1
	}
	return 0
}
