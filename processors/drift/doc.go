// Package drift is the distribution-drift processor: per key, a two-sample
// Kolmogorov–Smirnov test of one metric (default confidence) with a
// k-consecutive rule, in one of two modes.
//
//   - reference: each key's current window [now-Window, now) against its
//     own reference window [now-Window-ReferenceWindow, now-Window). A
//     lasting shift is flagged while the reference still holds the old
//     behaviour; once the shift has filled most of the reference window
//     (about (1 - MinEffect/D) × ReferenceWindow later) it is the new
//     normal and the verdicts return to ok.
//   - canary: the canary variant's current window against the baseline
//     variant's current window for the same tenant, service and model
//     (the key with Variant = BaselineVariant), plus a Mann–Whitney U test
//     and the Hodges–Lehmann shift. Spans of other variants are ignored.
//     The SLO's key must include the variant dimension, or no key is ever
//     a canary and no verdict is emitted.
//
// Windows are sets of span values (a uniform sample by span-id hash when a
// slot overflows MaxSamplesPerSlot; see collectUniform), so verdicts do not
// depend on arrival order. The p-value is stats.KS2SampSorted with
// stats.KSAuto (as scipy.stats.ks_2samp: exact while both samples have at
// most 10000 values, else SciPy's asymptotic form) when D >= MinEffect.
// When D < MinEffect the evaluation cannot be significant whatever p is,
// and the cheap asymptotic p-value is reported instead: the exact one
// costs O(n·m) for samples of unequal size.
//
// # The k-consecutive rule
//
// An evaluation is significant when p < Alpha and D >= MinEffect (with
// thousands of values any difference is significant; MinEffect keeps the
// rule to differences that matter). Per key, consecutive counts the
// significant evaluations in a row up to this one: breach when it reaches
// Consecutive, warn at 1..Consecutive-1, ok at 0. An evaluation that
// cannot test (insufficient_data) or has no data (no verdict) is not
// significant and resets the count to 0; the count is part of the
// snapshot. Mann–Whitney is reported, not part of the rule.
//
// With Every = 1m and a 5m window a shift is flagged (warn) at the first
// evaluation where it has moved D to MinEffect — within 2 evaluations for
// a full-window D of 0.25 or more — and breaches Consecutive-1 evaluations
// later (with the default 3: the 3rd or 4th evaluation after its start).
//
// # Verdict
//
//   - Processor "drift"; Metric "ks_<metric>" (reference) or
//     "canary_ks_<metric>" (canary), e.g. "ks_confidence".
//   - Key: the key (reference) or the canary key (canary).
//   - Value: the KS distance D in [0, 1]. Threshold: MinEffect. No
//     interval (Lower = Upper = IntervalLevel = 0).
//   - Status: insufficient_data when a side has fewer than MinSamples
//     values (Value 0, Method "none"); else by the k-consecutive rule.
//   - Method: "ks_exact" or "ks_asymp", how the KS p-value was computed
//     ("ks_asymp" whenever D < MinEffect).
//     The Mann–Whitney p-value is always the normal approximation with tie
//     and continuity corrections.
//   - N: the values tested, both sides.
//   - Details, in order: d, p_value, alpha, n_current, n_reference (the
//     other side: the reference window, or the baseline in canary mode),
//     consecutive; in canary mode also mw_u (U of the canary: pairs with
//     canary > baseline, ties 1/2), mw_p and hl_shift (Hodges–Lehmann
//     shift canary − baseline, in the metric's unit). insufficient_data
//     verdicts carry n_current, n_reference, consecutive (0) and
//     min_samples.
//
// A verdict is emitted per key (reference) or canary key (canary) with at
// least one value in the windows compared: in reference mode a key that
// went silent reports insufficient_data until its reference window is
// empty. Spans without the metric, or with a NaN or infinite value, are
// no values: they are counted per key and slot of Every
// (processors/internal/nosamples). A judged key that is blind for
// NoSamplesEvaluations evaluations in a row (default 5) gets, at each
// evaluation while that lasts and in place of its own verdict, a verdict
// of status insufficient_data, Method "no_samples", N 0, details calls,
// evaluations and no_samples_evaluations, and Evidence.Scopes naming the
// instrumentation scopes of those calls. Blind: in reference mode, the
// key's current window holds calls without a value and no value; in
// canary mode, the canary's does, or the canary has traffic and its
// baseline's current window holds calls without a value and no value
// (calls then counts the side(s) without a value). Its streak starts
// over.
//
// # Memory
//
// A key's state is its window.Store (24 bytes per kept sample, at most
// MaxSamplesPerSlot per Every slot) and a counter. Reference mode keeps
// (Window + ReferenceWindow)/Every + 1 slots: worst case with the defaults
// 66 × 2000 × 24 B ≈ 3.2 MB per key; a key at 5 spans/s keeps ≈ 470 kB.
// Canary mode keeps Window/Every + 1 slots per variant: worst case
// 6 × 2000 × 24 B ≈ 290 kB per key. Snapshots are the same size.
package drift
