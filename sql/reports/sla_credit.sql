-- Report sla_credit: SLA credits per tenant and SLO: the minutes out of objective and the credit they earn.
--
-- Source: verdicts FINAL, as tenant_slo_health (slots, step_s, minutes as defined there: an SLO's
-- verdicts in [@from, @to) except the effect processor's and tenant '*'s). One row per (tenant, slo)
-- with at least one evaluated slot, ordered from the largest credit, then tenant and SLO.
--
-- Definitions:
--   overrun        of a breach verdict: |value - threshold|, in the metric's unit (ms above a latency
--                  budget, burn rate above the factor, score units below a decline limit: the
--                  threshold is crossed upwards or downwards by kind, docs/verdicts.md)
--   overrun_ratio  of an out-of-objective slot: the largest overrun / |threshold| among the tenant's
--                  breach verdicts of the slot with a non-zero threshold (the worst key and metric);
--                  a slot whose breach verdicts all have threshold 0 has no ratio: it is counted in
--                  minutes_out_unpriced and earns no credit
--   credit         @credit_base × Σ over the priced out-of-objective slots of
--                  overrun_ratio ^ @credit_exponent × step_s / 3600
--                  i.e. base × (overrun ÷ threshold)^exponent × hours, each slot with its own ratio;
--                  with a constant ratio r over h hours out, base × r² × h at the default exponent 2.
--                  Exponent 0 is a flat base per hour out, 1 linear in the overrun. @credit_base is in
--                  the contract's unit (currency, or % of the period's fee) per hour out of objective at
--                  an overrun ratio of 1 (the value at twice, or for a limit below zero, at double the
--                  threshold). The credit is capped at @credit_cap per tenant and SLO when @credit_cap > 0.
--   hours_out      minutes_out / 60; credit_uncapped the credit before the cap
--   max_overrun_ratio  the largest overrun_ratio of the range (0 when no slot is priced)
--
-- Parameters (bound client-side):
--   @from             Int64    range start, unix seconds (inclusive)
--   @to               Int64    range end, unix seconds (exclusive)
--   @credit_base      Float64  credit per hour out at overrun ratio 1, >= 0 (default 1)
--   @credit_exponent  Float64  exponent of the overrun ratio, >= 0 (default 2)
--   @credit_cap       Float64  the most credit per tenant and SLO over the range; 0 = no cap (default 0)
SELECT
    tenant,
    slo,
    step_s,
    evaluated_slots * step_s / 60 AS evaluated_minutes,
    out_slots * step_s / 60 AS minutes_out,
    unpriced_slots * step_s / 60 AS minutes_out_unpriced,
    minutes_out / 60 AS hours_out,
    max_overrun_ratio,
    @credit_base * severity * step_s / 3600 AS credit_uncapped,
    if(@credit_cap > 0, least(credit_uncapped, @credit_cap), credit_uncapped) AS credit
FROM
(
    SELECT
        tenant,
        slo,
        countIf(judged) AS evaluated_slots,
        countIf(judged AND out) AS out_slots,
        countIf(out AND NOT priced) AS unpriced_slots,
        sumIf(pow(ratio, @credit_exponent), out AND priced) AS severity,
        maxIf(ratio, out AND priced) AS max_overrun_ratio
    FROM
    (
        SELECT
            tenant,
            slo,
            window_end,
            max(status = 'breach') AS out,
            max(status IN ('ok', 'warn', 'breach')) AS judged,
            max(status = 'breach' AND threshold != 0) AS priced,
            maxIf(abs(value - threshold) / abs(threshold), status = 'breach' AND threshold != 0) AS ratio
        FROM verdicts FINAL
        WHERE slo != '' AND processor != 'effect' AND tenant != '*'
          AND window_end >= toDateTime(@from) AND window_end < toDateTime(@to)
        GROUP BY tenant, slo, window_end
    )
    GROUP BY tenant, slo
    HAVING evaluated_slots > 0
) AS slots
ALL INNER JOIN
(
    -- per slo: the evaluation interval (as in tenant_slo_health)
    SELECT
        slo,
        if(length(ends) > 1, arrayReduce('min', arrayMap((a, b) -> b - a, arrayPopBack(ends), arrayPopFront(ends))), 60) AS step_s
    FROM
    (
        SELECT slo, arraySort(groupUniqArray(toInt64(toUInt32(window_end)))) AS ends
        FROM verdicts FINAL
        WHERE slo != '' AND processor != 'effect' AND tenant != '*'
          AND window_end >= toDateTime(@from) AND window_end < toDateTime(@to)
        GROUP BY slo
    )
) AS steps USING slo
ORDER BY credit DESC, tenant, slo
