// Package effect judges what every fuse command did: one `effect` verdict
// per command, saying whether the SLO signal that caused it recovered
// within a configured number of evaluations after it, with the value
// before (the verdict that caused the command) and after (the latest
// value over the traffic the command affects). It imports only package
// schemas and the standard library, reads no clock and does no I/O: it
// runs in event time on the SLOs' own verdicts, so the same verdicts and
// commands in the same order give the same effect verdicts, bit for bit,
// and its state (the pending judgements) is part of the engine's
// checkpoint, so a restart neither repeats nor loses one.
//
// # What is judged
//
// The engine calls Judge.Evaluate at every evaluation boundary, after the
// SLOs due there have evaluated and the breaker has acted, with that
// boundary's verdicts and commands. A command's signal is the (processor,
// SLO, metric) of the verdict that caused it: the newest of its reasons
// found among the verdicts of the evaluation that issued it (a trip, an
// escalation, a re-trip, a close). A command whose reasons are all older
// (a half-open, issued when the cool-down ends) inherits the signal of
// the target's previous command, and as its "before" the latest value
// that signal had on the tripping key. A command whose cause is not known
// at all (its target's earlier judgement was lost) gets an
// insufficient_data verdict at once (method ACTION:unknown_cause).
//
// "The target's traffic after it" depends on what the command does with
// the traffic, so each action judges a scope of keys (the target with
// some dimensions replaced by schemas.Wildcard):
//
//   - trip and degrade move the users' traffic away from the target (to
//     another provider, to the fallback model): the scope is the users'
//     traffic, every model and variant of the target's tenant and
//     service. The failing target stays in it, so an ignored command (a
//     gateway that did not act) shows as not recovered.
//   - rollback moves the canary's traffic to the baseline of the same
//     model: the scope is every variant of the target's model.
//   - throttle, scale_out and half_open (any command in state half_open)
//     keep the traffic on the target
//     (a fraction, more capacity, a probe): the scope is the target.
//   - close sends the traffic back to the target: the scope is the target,
//     and the question is whether the recovery holds.
//
// # Evaluations and outcomes
//
// An evaluation of a judgement is an evaluation boundary of the signal's
// SLO after the command's issue time: evaluation k is the k-th multiple of
// the SLO's interval after IssuedAt (boundaries the engine jumped over
// because no processor held state count too — there was no traffic). At
// each, the signal's verdicts for keys in the scope are gathered; those
// that are not insufficient_data decide, and the "after" value is the one
// of the worst status (breach, then warn, then ok), the busiest key (the
// largest N) among equals. Outcomes (the verdict's Method is
// ACTION:OUTCOME):
//
//   - recovered (status ok): every verdict of the scope at evaluation k
//     <= Evaluations is ok (a warn is an estimate still over budget: not
//     yet);
//   - not_recovered (breach): Evaluations evaluations passed, some with
//     traffic, none recovered;
//   - held (ok), for close: Evaluations evaluations passed without a
//     breach in the scope;
//   - relapsed (breach), for close: a breach in the scope at evaluation
//     k <= Evaluations;
//   - no_traffic (insufficient_data): Evaluations evaluations passed and
//     none had a verdict with data in the scope (the target was removed,
//     or the gateway moved all traffic to keys outside it);
//   - superseded (insufficient_data): a newer command (not a refresh)
//     for the target came before the judgement ended; its version is in
//     detail superseded_by. A half-open supersedes only an earlier
//     half-open: the judgement of the command that opened the target goes
//     on while the half-open probes (the users' traffic is still where
//     that command sent it), and the two are judged side by side; a
//     re-trip, an escalation or a close supersedes both;
//   - slo_removed (insufficient_data): the signal's SLO is no longer in
//     the configuration (after an edit and a restart).
//
// A refresh (a command that re-issues the target's previous command
// unchanged but for version, times and reason texts: same action, state,
// level, fallback, fraction, incident and reason verdict ids) is not
// judged on its own: the decision
// it repeats is already being judged.
//
// # The verdict
//
// Processor "effect"; SLO and Metric the signal's; Key the command's
// target; window [the command's issued-at, the deciding evaluation];
// Value the after value (0 when insufficient_data); Threshold the
// signal's budget; N the observations behind the after value; Method
// ACTION:OUTCOME, where ACTION is the command's action, or half_open for
// any command in state half_open (the breaker keeps a degrade's or a
// throttle's action while it probes: it is judged as the probe it is).
// Details, always in this order: command_version, command_level, before,
// after, after_status (of the after value: 0 none, 1 ok, 2 warn, 3
// breach), recovered (1 recovered or held, else 0),
// evaluations (taken to decide), max_evaluations (the configured
// Evaluations), evaluations_with_traffic, scope_keys (keys behind the
// after value), superseded_by. The id is schemas.VerdictID("effect", SLO,
// metric, target, version, config version) — the command's version in
// place of a window end — so every command has one id, and a replay gives
// the same.
package effect
