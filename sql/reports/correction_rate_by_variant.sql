-- Report correction_rate_by_variant: user-correction rate per model and deployment variant.
--
-- Source: span_rollups FINAL, minute in [@from, @to), all tenants and services together.
-- rate = corrections / responses, where responses are spans and corrections the correction events
-- joined to them. The interval is the 95% Wilson score interval (z = 1.959963984540054) on
-- min(corrections, responses) of responses. Variants without responses are not shown.
--
-- Parameters (bound client-side):
--   @from  Int64  range start, unix seconds (inclusive)
--   @to    Int64  range end, unix seconds (exclusive)
SELECT
    model, variant, responses, corrected,
    corrected / responses AS rate,
    wilson_center - wilson_half AS rate_lower,
    wilson_center + wilson_half AS rate_upper
FROM
(
    SELECT
        model, variant, responses, corrected,
        (p_hat + z * z / (2 * responses)) / (1 + z * z / responses) AS wilson_center,
        z * sqrt(p_hat * (1 - p_hat) / responses + z * z / (4 * responses * responses)) / (1 + z * z / responses) AS wilson_half
    FROM
    (
        SELECT
            model,
            variant,
            sum(spans) AS responses,
            sum(corrections) AS corrected,
            least(corrected, responses) / responses AS p_hat,
            1.959963984540054 AS z
        FROM span_rollups FINAL
        WHERE minute >= toDateTime(@from) AND minute < toDateTime(@to)
        GROUP BY model, variant
        HAVING responses > 0
    )
)
ORDER BY model, variant
