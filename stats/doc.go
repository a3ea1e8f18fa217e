// Package stats holds the numerics of fusebox: pure functions and small
// value-typed accumulators, with no I/O, no clock, no global randomness and
// no imports from the rest of the project.
//
// What is here, by file:
//
//   - gpd*.go: the Generalized Pareto distribution (location 0): its
//     log-likelihood, the maximum-likelihood fit by Grimshaw's
//     one-dimensional reduction, and the profile-likelihood or delta-method
//     confidence interval of a peaks-over-threshold tail quantile.
//   - pot.go, tail.go, quantile.go: the POT tail quantile, the threshold
//     helper, empirical quantiles and the one call the tail processor makes
//     (TailQuantile / TailEstimator).
//   - ks*.go, kolmogorov.go: the two-sample Kolmogorov–Smirnov test with
//     the p-values of scipy.stats.ks_2samp ('exact', 'asymp', 'auto').
//   - mannwhitney.go: Mann–Whitney U (tie-corrected, continuity-corrected
//     normal p-value) and the Hodges–Lehmann shift.
//   - regression.go: OLS (as scipy.stats.linregress) and Theil–Sen (as
//     scipy.stats.theilslopes).
//   - entropy.go, welford.go, proportion.go: Shannon entropy, mergeable
//     mean/variance, the Wilson interval and the two-proportion z-test.
//   - studentt.go: Student's t quantile (the OLS slope's interval);
//     smirnov.go: the one-sided Smirnov tail the KS p-values use.
//   - cusum.go: the one-sided Bernoulli CUSUM (the burn-rate processor's
//     sequential page method) and its false-alarm bound E·e^-h.
//
// Windows are not kept here: the processors hold their samples in the
// event-time slot store of processors/window, and call these functions on
// them.
//
// Conventions. Empty or degenerate input is an explicit error wrapping one of
// the sentinels in errors.go (ErrTooFewSamples, ErrDegenerate, ...) or an
// ok=false result; no function returns NaN to mean "no data". Results that
// can legitimately be infinite (a log-likelihood outside the support) say so
// in their doc comment. Sample values are in whatever unit the caller uses
// (milliseconds for latencies); estimates come back in the same unit.
//
// Where a function reproduces SciPy, its doc comment names the SciPy
// function, and the tests check it against reference values computed with
// SciPy (testdata/refdata, or the directory named by FUSEBOX_REFDATA).
package stats
