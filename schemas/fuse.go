package schemas

import "github.com/fusebox-dev/fusebox/fuse/fuseschema"

// The fuse command and its canonical encoding live in package fuseschema
// of the fuse module (github.com/fusebox-dev/fusebox/fuse), so that a
// gateway importing package fuse needs only that module (franz-go and the
// standard library), not this one. The names below are the same types,
// values and functions: schemas.FuseCommand is fuseschema.FuseCommand.

// Action is what a fuse command tells a gateway to do for its target.
type Action = fuseschema.Action

// The actions; see fuseschema.
const (
	ActionTrip     = fuseschema.ActionTrip
	ActionHalfOpen = fuseschema.ActionHalfOpen
	ActionClose    = fuseschema.ActionClose
	ActionDegrade  = fuseschema.ActionDegrade
	ActionThrottle = fuseschema.ActionThrottle
	ActionRollback = fuseschema.ActionRollback
	ActionScaleOut = fuseschema.ActionScaleOut
)

// BreakerState is the state of a target's breaker after the command.
type BreakerState = fuseschema.BreakerState

// The breaker states; see fuseschema.
const (
	StateClosed   = fuseschema.StateClosed
	StateOpen     = fuseschema.StateOpen
	StateHalfOpen = fuseschema.StateHalfOpen
)

// Reason ties a command to a verdict that caused it.
type Reason = fuseschema.Reason

// FuseCommand is what the breaker tells gateways about one target; its
// canonical JSON (fusebox.fuse_command.v1) is defined in package
// fuseschema (fuse/fuseschema/fuse_command.v1.schema.json).
type FuseCommand = fuseschema.FuseCommand

// The canonical form's constants; see fuseschema.
const (
	FuseCommandSchema   = fuseschema.FuseCommandSchema
	MaxFuseCommandBytes = fuseschema.MaxFuseCommandBytes
	MaxFuseCommandLevel = fuseschema.MaxFuseCommandLevel
)

// The canonical form's lists (the same slices as fuseschema's); see
// fuseschema.
var (
	FuseCommandFields = fuseschema.FuseCommandFields
	Actions           = fuseschema.Actions
	BreakerStates     = fuseschema.BreakerStates
)

// CompareFuseOrder orders two commands of one target by (issued-at,
// version); see fuseschema.CompareFuseOrder.
func CompareFuseOrder(a, b *FuseCommand) int { return fuseschema.CompareFuseOrder(a, b) }

// DecodeFuseCommand parses and validates the JSON of a fuse command; see
// fuseschema.DecodeFuseCommand.
func DecodeFuseCommand(b []byte) (FuseCommand, error) { return fuseschema.DecodeFuseCommand(b) }
