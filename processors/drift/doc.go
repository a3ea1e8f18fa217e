// Package drift is the distribution-drift processor: per key, up to three
// detectors of one metric (default confidence), each with its own verdict
// metric, in one of two modes.
//
//   - reference: each key's current window [now-W, now) against its own
//     reference window [now-W-ReferenceWindow, now-W), W = Window grown
//     by Every while it holds fewer than MinWindowSamples values, to
//     MaxWindow at most (a count-based window for low-rate keys). A
//     lasting shift is flagged while the reference still holds the old
//     behaviour; once the shift has filled most of the reference window
//     it is the new normal and the verdicts return to ok.
//   - canary: the canary variant's current window against the baseline
//     variant's current window for the same tenant, service and model
//     (the key with Variant = BaselineVariant), plus a Mann–Whitney U test
//     and the Hodges–Lehmann shift. Spans of other variants are ignored.
//     The SLO's key must include the variant dimension, or no key is ever
//     a canary and no verdict is emitted. Only the ks detector runs.
//
// The detectors (Config.Detectors; default all three in reference mode):
//
//   - ks (metric ks_<metric>, every Every): the two-sample KS test of the
//     windows, with the k-consecutive rule below. Sensitive to any change
//     of shape (a variance change at the same mean).
//   - cusum (cusum_<metric>, every Step, reference mode): a two-sided
//     CUSUM (stats.NormalCUSUM) of each call's normal score against the
//     reference window of the last KS evaluation m,
//     [m-Window-ReferenceWindow, m-Window):
//     z = Φ⁻¹(mid-rank of the value among the reference, scaled into
//     (0, 1)) (stats.NormalScore) — N(0, 1) for a healthy key whatever
//     the score's shape — with K = CUSUMShift/2. The calls of each step
//     are taken in (time, span hash) order, so the statistic does not
//     depend on arrival order. Flags a mean shift within a minute at
//     200 calls/min.
//   - slice (slice_<metric>, every Step, reference mode): the share of
//     calls beyond a cut (below the reference's SliceQuantile quantile
//     for scores, above the 1-SliceQuantile one for latency and tokens,
//     or SliceThreshold) in a Bernoulli CUSUM (stats.BernoulliCUSUM) of
//     p1 = SliceFactor·p0 against the reference's share p0: a few
//     percent of answers going bad, which moves the KS distance by only
//     a few hundredths.
//
// # False alarms
//
// FalseAlarms (default 0.001 per key-day: the breaker's false-trip
// target) is split evenly between the enabled detectors, a = FalseAlarms
// / detectors, and each detector's per-evaluation level follows from its
// share, so no streak rule is needed for control:
//
//   - ks: alpha = a / (1 day / Every) = 2.3e-7 at the defaults
//     (Bonferroni: the expected significant evaluations of a healthy key
//     per day are at most a, whatever the windows' overlap), unless
//     Alpha is set. Consecutive defaults to 1, MinEffect to 0 (both
//     options) in reference mode; 3 and 0.1 in canary mode, where
//     canary and baseline are different deployments and a small, real
//     difference must not roll back (Config.EffectiveConsecutive,
//     Config.EffectiveMinEffect).
//   - cusum: per step a budget of a/E (E = 1 day / Step = 5,760); the
//     chance of an alarm among n standardized calls is about 2n/ARL0(h),
//     ARL0 Siegmund's approximation (stats.SiegmundARL), so h solves
//     ARL0(K, h) = 2n·E/a (stats.CUSUMThresholdForARL), with n the
//     step's calls or the reference's mean per step, the larger (h ≈ 59
//     at 200 calls/min, 52 at 20, a = 0.001/3, K = 0.15). The threshold follows the key's
//     rate as the sliding reference moves. The approximation assumes an
//     exact reference; with a sampled one of n values the scores' mean is
//     off by ε ~ N(0, 1/n), which raises the averaged alarm rate by about
//     exp(2(h+1.166)²/n): the chart runs at K + 2(h+1.166)/n, twice the
//     first-order correction (0.01 sd at 200 calls/min, 0.09 at 20).
//     SequentialMinReference (400 values) bounds that margin.
//   - slice: h = ln(E/a) nats (16.7): by Ville's inequality on the
//     likelihood-ratio martingale at most a false breach episodes per
//     key-day while the bad share is at most p0 (stats.FalseAlarmBound).
//     p0 is the reference's share, raised for its sampling error
//     (sliceGuard: +20% at 200 calls/min, about 3x at 20).
//
// By design a healthy, stationary key then has at most about FalseAlarms
// breach episodes per key-day in all, and a breaker trip (it needs
// breaches) no more: exact for ks, approximate for cusum and slice, and
// not covered when the traffic drifts slowly (the sliding reference lags
// by about 35 minutes); the measured rates are in docs/configuration.md
// ("Drift detectors") and BenchmarkDetectionStudy.
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
// With Every = 1m and the default Consecutive 1 a shift breaches at the
// first evaluation where its p-value is below alpha (with Consecutive k:
// warn then, breach k-1 evaluations later).
//
// # Verdict
//
// The ks verdict (the cusum and slice verdicts: docs/verdicts.md, and
// judgeCUSUM, judgeSlice):
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
//     consecutive, and in reference mode window_s (the current window's
//     span in seconds); in canary mode also mw_u (U of the canary: pairs with
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
// MaxSamplesPerSlot per Every, in slots of Step when a sequential
// detector runs, else of Every), a counter and three statistics.
// Reference mode keeps (MaxWindow + ReferenceWindow) of slots: worst case
// with the defaults 90 × 2000 × 24 B ≈ 4.3 MB per key; a key at 5
// spans/s keeps ≈ 650 kB (470 kB before MaxWindow: the slots of a window
// that may grow are kept whatever the key's rate).
// Canary mode keeps Window/Every + 1 slots per variant: worst case
// 6 × 2000 × 24 B ≈ 290 kB per key. Snapshots are the same size.
package drift
