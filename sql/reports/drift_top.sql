-- Report drift_top: the most drifted metrics.
--
-- Source: verdicts FINAL of the drift processor, status other than insufficient_data, window_end in
-- [@from, @to). One row per (metric, tenant, service, model, variant): how many evaluations
-- breached, their share, and the largest test statistic (the verdict value, e.g. the KS distance).
-- Ordered by breaches, then the largest statistic; the first @limit rows.
--
-- Parameters (bound client-side):
--   @from   Int64   range start, unix seconds (inclusive)
--   @to     Int64   range end, unix seconds (exclusive)
--   @limit  UInt64  rows to show
SELECT
    metric,
    tenant,
    service,
    model,
    variant,
    count() AS evaluations,
    countIf(status = 'breach') AS breaches,
    breaches / evaluations AS breach_share,
    max(value) AS max_statistic
FROM verdicts FINAL
WHERE processor = 'drift'
  AND status != 'insufficient_data'
  AND window_end >= toDateTime(@from) AND window_end < toDateTime(@to)
GROUP BY metric, tenant, service, model, variant
ORDER BY breaches DESC, max_statistic DESC, metric, tenant, service, model, variant
LIMIT @limit
