package pipeline

import (
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/schemas"
)

// commandClock is the rule for the times fuse commands carry, applied at
// the one place commands leave the engine, before they are signed: the
// breaker issues a command at the event time of the evaluation that
// decided it (deterministic: a replay issues the same command), but a
// command is never issued later than the wall clock. One whose issued-at
// is ahead of the wall clock (event time runs ahead: `fusebox gen
// --speedup` from now, a producer with a fast clock) is moved back to the
// wall clock with its lifetime: issued-at = now, expires-at = now + (its
// expires-at - its issued-at), so a gateway never holds a command expiring
// more than one command_ttl after the wall clock. Commands issued in the
// past (a backlog being worked through) keep their times: a gateway drops
// those that have already expired and applies the rest until they expire.
// The wall clock never enters a processor: verdicts, versions and every
// command of a run whose event time is behind the wall clock are the same
// bit for bit.
type commandClock struct {
	now    func() time.Time
	signer engine.Signer // nil: unsigned
}

func (c commandClock) SignAll(cmds []schemas.FuseCommand) error {
	ClampCommandTimes(cmds, c.now())
	if c.signer == nil {
		return nil
	}
	return c.signer.SignAll(cmds)
}

// ClampCommandTimes applies the command clock's rule (see commandClock) to
// cmds at wall time now: an issued-at after now moves to now, the
// expires-at with it.
func ClampCommandTimes(cmds []schemas.FuseCommand, now time.Time) {
	n := now.UnixNano()
	for i := range cmds {
		c := &cmds[i]
		if c.IssuedAtUnixNano > n {
			c.ExpiresAtUnixNano = n + (c.ExpiresAtUnixNano - c.IssuedAtUnixNano)
			c.IssuedAtUnixNano = n
		}
	}
}
