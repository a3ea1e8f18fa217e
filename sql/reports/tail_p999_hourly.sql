-- Report tail_p999_hourly: P99.9 per model and metric per hour, with its confidence interval.
--
-- Source: verdicts FINAL of the tail processor (its configured p, 0.999 by default), status other
-- than insufficient_data, window_end in [@from, @to).
-- One row per (hour of window_end in UTC, model, metric). The row shows the highest estimate among
-- that hour's tail verdicts for the model (any tenant, service or variant) together with the
-- interval, level, budget, method, status and key of that same verdict; ties go to the later
-- window end, then the larger id. evaluations and breaches count all of the hour's verdicts.
--
-- Parameters (bound client-side):
--   @from  Int64  range start, unix seconds (inclusive)
--   @to    Int64  range end, unix seconds (exclusive)
SELECT
    hour, model, metric, evaluations, breaches,
    tupleElement(worst, 1) AS estimate,
    tupleElement(worst, 2) AS ci_lower,
    tupleElement(worst, 3) AS ci_upper,
    tupleElement(worst, 4) AS ci_level,
    tupleElement(worst, 5) AS budget,
    tupleElement(worst, 6) AS estimate_method,
    tupleElement(worst, 7) AS estimate_status,
    tupleElement(worst, 8) AS estimate_tenant,
    tupleElement(worst, 9) AS estimate_service,
    tupleElement(worst, 10) AS estimate_variant
FROM
(
    SELECT
        toStartOfHour(window_end) AS hour,
        model,
        metric,
        count() AS evaluations,
        countIf(status = 'breach') AS breaches,
        argMax(tuple(value, lower, upper, interval_level, threshold, method, status, tenant, service, variant),
               tuple(value, window_end, id)) AS worst
    FROM verdicts FINAL
    WHERE processor = 'tail'
      AND status != 'insufficient_data'
      AND window_end >= toDateTime(@from) AND window_end < toDateTime(@to)
    GROUP BY hour, model, metric
)
ORDER BY hour, model, metric
