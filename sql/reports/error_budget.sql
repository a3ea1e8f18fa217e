-- Report error_budget: error budget remaining per (tenant, service, model) over the range.
--
-- Source: span_rollups FINAL, minute in [@from, @to).
-- Definition (availability SLO with objective @objective, e.g. 0.999):
--   budget_errors    = (1 - @objective) * spans       errors the objective allows in the range
--   budget_consumed  = errors / budget_errors         1 = exactly spent
--   budget_remaining = 1 - budget_consumed            negative = overspent
-- An error is a span with an error status or error.type. Keys without spans in the range are not
-- shown. Rows are ordered from the least budget remaining.
--
-- Parameters (bound client-side):
--   @from       Int64    range start, unix seconds (inclusive)
--   @to         Int64    range end, unix seconds (exclusive)
--   @objective  Float64  the availability objective, in (0, 1)
SELECT
    tenant,
    service,
    model,
    sum(spans) AS total_spans,
    sum(errors) AS total_errors,
    total_errors / total_spans AS error_rate,
    (1 - @objective) * total_spans AS budget_errors,
    total_errors / budget_errors AS budget_consumed,
    1 - budget_consumed AS budget_remaining
FROM span_rollups FINAL
WHERE minute >= toDateTime(@from) AND minute < toDateTime(@to)
GROUP BY tenant, service, model
HAVING total_spans > 0
ORDER BY budget_remaining, tenant, service, model
