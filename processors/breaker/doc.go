// Package breaker turns verdicts into fuse commands: one circuit breaker
// per target, CLOSED → OPEN → HALF_OPEN → CLOSED, driven by verdicts and by
// event time only. It imports package schemas, package processors (only
// for processors.StarvedProbe, the report of half-open targets whose
// probes cannot be judged) and the standard library; it reads no clock and
// draws no random numbers: the same verdicts and Advance calls in the same
// order give the same commands, bit for bit.
//
// # Targets and rules
//
// A target is a key with some dimensions replaced by schemas.Wildcard
// (Policy.Target, per rule Rule.Target). Each Rule maps the breaches of one
// processor (optionally one SLO, one metric) to an action and a level:
// degrade to a fallback model (level 1), trip / fail over (level 2),
// throttle to a fraction (1), roll back the canary (1), scale out (0). A
// verdict is matched against every rule; each matching rule keeps a k-of-n
// history per series (processor, SLO, metric and the verdict's full key),
// so a coarse target trips when any one of its keys' series does.
//
// # Transitions (t is the evaluation time: a verdict's window end, or the
// instant passed to Advance)
//
//   - CLOSED → OPEN (trip): a breach brings some series of a rule to at
//     least k breaches among its last n evaluations. When several rules
//     reach k at once the highest level wins (ties: the earlier rule). The
//     target stays open for the cool-down: CoolDown × BackoffFactor^(s-1)
//     capped at MaxCoolDown, where s is the backoff step (the number of
//     trips in this incident).
//   - OPEN → OPEN (escalation): while open, a rule of a higher level than
//     the active one reaching k re-opens the target with that rule's
//     action (a further step of the backoff).
//   - OPEN → HALF_OPEN: t reaches the end of the cool-down (in Advance, or
//     before a verdict for the target is applied in Observe).
//   - HALF_OPEN → OPEN (re-trip): any breach matched by a rule of the
//     target — of the series that tripped it or of any other; the action
//     becomes the more severe of the active one and the breaching rule's;
//     the backoff step increases, and the breaching signal joins the
//     tripping signals of the incident.
//   - HALF_OPEN → CLOSED: every tripping signal of the incident has
//     CloseAfter healthy evaluations in a row since the half-open began.
//     A tripping signal is a (processor, SLO, metric) whose breach opened
//     the target in this incident: the trip, an escalation or a re-trip.
//     An evaluation (window end) of a signal is healthy when it has an ok
//     verdict and no warn for any key of the target (a coarse target
//     gathers several keys; one evaluation counts once); a warn resets
//     the signal's streak. Verdicts of every other signal (other SLOs)
//     neither count toward the close nor reset it; a breach of any of them
//     still re-trips (above).
//   - Probes: in HALF_OPEN a tripping signal is judged on the traffic
//     admitted since the half-open began. Its verdicts whose window
//     starts before that instant (they still hold the incident) are
//     ignored (Stats.Stale); ProbesFor tells the engine which keys (those
//     of the target the signal was seen for) of which SLOs to judge on [half-open start, now) — processors that
//     have processors.Hooks.SetProbes (tail, decay, corrections) do so from
//     the next evaluation, with their min_samples (fewer:
//     insufficient_data, the target waits); the others' verdicts count
//     once their window has slid past the half-open start.
//
// A trip clears the histories of the rules at or below the new active
// level (those above keep counting toward escalation, so a ladder "degrade
// at 3 of 10, trip at 6 of 10" trips on the 6th breach); a close clears
// all, so breaches seen before a close cannot re-trip the target after.
//
// Statuses: insufficient_data is neither healthy nor breaching — it is
// ignored (it takes no slot of n, does not advance or reset a half-open
// streak, and does not even advance the target's time). warn is healthy
// for the k-of-n count (it is not a breach) but not for closing: in
// HALF_OPEN a warn of a tripping signal resets its healthy streak to 0
// without re-opening, because the estimate is still over its budget. A verdict whose window end
// is not after the last one of its series (a replay, or a late verdict) is
// ignored and counted in Stats.Duplicates.
//
// Flapping: the backoff step is kept after a close; a trip that comes less
// than FlapWindow after the close continues the step (its cool-down doubles
// again) instead of starting from CoolDown. A trip FlapWindow or more after
// the close starts a new incident at step 1.
//
// # Commands
//
// At most one command per target per Observe or Advance call, and none
// when nothing changed, except a refresh: an open or half-open target's
// command is re-issued, unchanged but for version, issued-at and
// expires-at, once it is CommandTTL/2 old (checked whenever the target is
// evaluated: Observe for its verdicts, and every Advance). Closed targets
// are not refreshed: an expired close means the same as no command.
//
// Each command carries:
//   - Action, Level, State: open → the rule's action and level; half-open →
//     the same action (half_open instead of trip), with ThrottleFraction =
//     max(HalfOpenFraction, the throttle fraction) as the share of requests
//     admitted to probe; closed → close, level 0.
//   - Version: base + 1, base + 2, ... per target (see VersionShift).
//   - IssuedAtUnixNano = t, ExpiresAtUnixNano = t + CommandTTL.
//   - Reasons: the verdicts behind the state — the k or more breaches of
//     the tripping series (trip, escalation), the failed probe (re-trip),
//     the trip's verdicts again (half-open, refresh), the CloseAfter ok
//     verdicts (close) — each with a short text. Every reason cites a
//     verdict observed for the target.
//   - CorrelationIDs: the incident id first (hex SHA-256 of the target and
//     the time of the trip that opened the incident; every command from
//     that trip to the close shares it), then "slo:NAME" for each SLO that
//     caused a trip in the incident.
//   - KeyID and Signature empty: the engine signs (package fuse).
//
// # Memory
//
// A target is created only by a breach (a healthy verdict for an unknown
// target is dropped: an empty history already means no breach). It is
// evicted, without a command, once it has had no breach and no state change
// for EvictAfter; an open or half-open target's last command then expires
// at the gateways within CommandTTL. MaxTargets caps the targets held; a
// breach for a new target beyond it is dropped and counted. Histories hold
// at most n entries per series.
//
// # Snapshots
//
// MarshalBinary and UnmarshalBinary write and read the whole state as
// deterministic JSON (see SnapshotFormat); a restored breaker continues
// exactly as the original would have.
package breaker
