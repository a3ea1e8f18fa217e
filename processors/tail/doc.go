// Package tail is the tail-latency processor: per key, the P-quantile
// (default P99.9) of one latency metric (duration_ms, ttft_ms or tpot_ms)
// over the event-time window [now-Window, now), by peaks over threshold,
// judged against a budget.
//
// # Estimate
//
// The window's values (a uniform sample by span-id hash when slots
// overflowed MaxSamplesPerSlot; see collectUniform) go to
// stats.TailEstimator: threshold u = the type-7 empirical
// ThresholdQuantile-quantile of the window (default 0.95) on windows of up
// to 10,000 kept values, raised on larger ones so that about 5*sqrt(kept)
// values exceed it (stats.TailConfig.ThresholdQuantileAt: the P98.4 of
// 100,000 values, so that the fit's bias where the law is not yet a GPD
// does not outgrow its narrowing interval), a Generalized
// Pareto fitted by maximum likelihood to the excesses over u (Grimshaw's
// one-dimensional reduction), the tail quantile
//
//	x_p = u + sigma/xi * ((zeta/(1-p))^xi - 1),  zeta = n_exceedances/kept
//
// and its 95% profile-likelihood interval (the delta-method interval when
// the profile search fails). With fewer than MinExceedances values above u
// (or no fit) the value is the empirical quantile with a distribution-free
// order-statistic interval (binomial ranks); when the sample is too small
// for an upper order statistic, Upper is the sample maximum and the detail
// upper_unbounded is 1.
//
// # Verdict
//
//   - Processor "tail"; Metric "p<digits>_<metric>", the digits being P in
//     percent without the decimal point (MetricName): P=0.999 on
//     duration_ms gives "p999_duration_ms", 0.99 on ttft_ms "p99_ttft_ms".
//   - Value: the P-quantile estimate, in the metric's unit (ms, or ms/token
//     for tpot_ms). Threshold: Budget. Lower/Upper: the interval at
//     Config.Level (default 0.95).
//   - Status: insufficient_data when fewer than MinSamples values were kept
//     (Value 0, Method "none"); breach when Lower > Budget; warn when
//     Value > Budget; ok otherwise — unless one call explains it: in a
//     window of at least 1/(1-P) values, when the estimate without the
//     largest value is within the budget and below Lower, the verdict is
//     ok and the detail one_call is 1 (one call is not an incident: it
//     would repeat in every overlapping window). See withoutLargest.
//   - Method: "gpd_mle_profile", "gpd_mle_delta" or "empirical_quantile".
//   - N: the values the estimate used (kept).
//   - Details, in order: xi, sigma (0 for empirical_quantile), threshold_u,
//     n_exceedances, n (all spans in the window, sampled-out included),
//     kept, empirical_quantile (the type-7 P-quantile of the kept values,
//     whatever the method), upper_unbounded (0/1), sample_rate (fraction of
//     the window's spans kept). insufficient_data verdicts carry n, kept and
//     min_samples.
//
// A verdict is emitted for every key with at least one span in the window.
// Spans without the metric, or with a NaN or infinite value, are no
// samples: they are counted per key and slot of Every, and a key whose
// window holds such calls and no sample for NoSamplesEvaluations
// evaluations in a row (default 5) gets, at each evaluation while that
// lasts, a verdict of status insufficient_data, Method "no_samples", N 0,
// details calls (in the window), evaluations (in a row) and
// no_samples_evaluations, and Evidence.Scopes naming the instrumentation
// scopes of those calls (at most 8): the SLO is blind there, and says so.
//
// # Memory
//
// A key's state is its window.Store: 24 bytes per kept sample, at most
// MaxSamplesPerSlot per slot, Window/Every slots plus those ahead of the
// evaluation (normally one), about 40 bytes per slot and the key's
// strings. Worst case with the defaults: 11 × 20000 × 24 B ≈ 5.3 MB per
// key; a key at 10 spans/s keeps 11 × 600 × 24 B ≈ 160 kB. Snapshots are
// the same size. A key without samples keeps 16 bytes per slot of calls
// and its scopes.
package tail
