-- Report slo_compliance_daily: SLO compliance per day.
--
-- Source: verdicts FINAL with an SLO name, window_end in [@from, @to).
-- One row per (day of window_end in UTC, slo, model). compliance is the share of the day's
-- evaluations that were not a breach: (ok + warn) / (ok + warn + breach). Evaluations with
-- insufficient data are counted in their own column and left out of the ratio; days with none but
-- insufficient data are not shown (no ratio exists for them).
--
-- Parameters (bound client-side):
--   @from  Int64  range start, unix seconds (inclusive)
--   @to    Int64  range end, unix seconds (exclusive)
SELECT
    toDate(window_end) AS day,
    slo,
    model,
    countIf(status = 'ok') AS ok_evaluations,
    countIf(status = 'warn') AS warn_evaluations,
    countIf(status = 'breach') AS breach_evaluations,
    countIf(status = 'insufficient_data') AS insufficient_evaluations,
    ok_evaluations + warn_evaluations + breach_evaluations AS evaluations,
    (ok_evaluations + warn_evaluations) / evaluations AS compliance
FROM verdicts FINAL
WHERE slo != ''
  AND window_end >= toDateTime(@from) AND window_end < toDateTime(@to)
GROUP BY day, slo, model
HAVING evaluations > 0
ORDER BY day, slo, model
