-- Report tenant_slo_health: the tenant SLO health matrix: compliance, error budget, breaches and incidents per tenant and SLO.
--
-- Source: verdicts FINAL with an SLO name and window_end in [@from, @to), except the effect
-- processor's (they judge fuse commands, not the SLO) and those of tenant '*' (a verdict that spans
-- every tenant is no one tenant's); fuse_commands FINAL issued in [@from, @to) for the incidents.
-- One row per (tenant, slo) with at least one evaluated slot, ordered by tenant and SLO.
--
-- Definitions (sla_credit uses the same slots, steps and minutes):
--   slot               one evaluation of an SLO for a tenant: (tenant, slo, window_end). Out of
--                      objective when any verdict of the tenant's keys for the SLO at that window end
--                      (any service, model, variant, metric) is a breach; in objective when none is and
--                      one is ok or warn; a slot of insufficient_data verdicts only is not evaluated.
--   step_s             the SLO's evaluation interval, seconds: the smallest gap between two distinct
--                      window ends of the SLO in the range (its `every`: evaluations are aligned to it);
--                      60 (the default `every`) when the range holds a single window end of the SLO.
--   evaluated_minutes  evaluated slots × step_s / 60
--   minutes_out        out-of-objective slots × step_s / 60
--   compliance         in-objective slots / evaluated slots: the share of evaluated minutes in objective
--   budget_minutes     (1 - @objective) × evaluated_minutes: the minutes out of objective allowed
--   budget_minutes_left  budget_minutes - minutes_out (negative = overspent)
--   budget_remaining   1 - minutes_out / budget_minutes (1 = untouched, 0 = spent, negative = overspent)
--   breach_evaluations the breach verdicts (every key and metric of the tenant counts)
--   breach_episodes    maximal runs of consecutive out-of-objective slots among the evaluated slots
--                      (a slot of insufficient data neither splits nor extends a run)
--   incidents          distinct incident ids of the fuse commands issued in the range that name the SLO
--                      and whose target covers a key of the tenant ('*' covers every value) with a
--                      verdict of the SLO in the range. Today's incident id is the breaker's:
--                      correlation_ids[1], one per target from its trip to its close, and the SLOs are
--                      its 'slo:NAME' correlation ids. An incidents table joins in by giving the
--                      incident_targets subquery below rows of the same shape: (incident, slo, and a
--                      target pattern per key of the incident, e.g. its records' breaching keys by
--                      ARRAY JOIN, with target and version naming the record).
--   fuse_commands      the commands counted in incidents (distinct target and version)
--
-- Parameters (bound client-side):
--   @from       Int64    range start, unix seconds (inclusive)
--   @to         Int64    range end, unix seconds (exclusive)
--   @objective  Float64  share of evaluated minutes in objective the SLO promises, in (0, 1)
SELECT
    tenant,
    slo,
    step_s,
    evaluated_slots * step_s / 60 AS evaluated_minutes,
    out_slots * step_s / 60 AS minutes_out,
    (evaluated_slots - out_slots) / evaluated_slots AS compliance,
    (1 - @objective) * evaluated_minutes AS budget_minutes,
    budget_minutes - minutes_out AS budget_minutes_left,
    1 - minutes_out / budget_minutes AS budget_remaining,
    breach_evaluations,
    breach_episodes,
    incidents,
    fuse_commands
FROM
(
    SELECT tenant, slo, step_s, evaluated_slots, out_slots, breach_evaluations, breach_episodes
    FROM
    (
        -- per (tenant, slo): the slots, in time order as window_end * 2 + out
        SELECT
            tenant,
            slo,
            countIf(judged) AS evaluated_slots,
            countIf(judged AND out) AS out_slots,
            sum(breaches) AS breach_evaluations,
            arrayMap(x -> x % 2, arraySort(groupArrayIf(toUInt64(toUInt32(window_end)) * 2 + out, judged))) AS outs,
            arraySum(arrayMap((o, p) -> o > p, outs, arrayPushFront(arrayPopBack(outs), 0))) AS breach_episodes
        FROM
        (
            SELECT
                tenant,
                slo,
                window_end,
                max(status = 'breach') AS out,
                max(status IN ('ok', 'warn', 'breach')) AS judged,
                countIf(status = 'breach') AS breaches
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
        -- per slo: the evaluation interval
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
) AS matrix
ALL LEFT JOIN
(
    -- per (tenant, slo): the incidents whose targets cover the tenant's keys of the SLO
    SELECT tenant, slo, uniqExact(incident) AS incidents, uniqExact(target, version) AS fuse_commands
    FROM
    (
        -- incident_targets: (incident, slo, target pattern) of each command in the range
        SELECT incident, slo, target, version, target_tenant, target_service, target_model, target_variant
        FROM
        (
            SELECT
                correlation_ids[1] AS incident,
                arrayMap(s -> substring(s, 5), arrayFilter(s -> substring(s, 1, 4) = 'slo:', correlation_ids)) AS slos,
                target, version, target_tenant, target_service, target_model, target_variant
            FROM fuse_commands FINAL
            WHERE issued_at >= toDateTime(@from) AND issued_at < toDateTime(@to)
              AND length(correlation_ids) > 0
        )
        ARRAY JOIN slos AS slo
    ) AS incident_targets
    ALL INNER JOIN
    (
        -- the keys of each tenant with a verdict of the SLO in the range
        SELECT DISTINCT slo, tenant, service, model, variant
        FROM verdicts FINAL
        WHERE slo != '' AND processor != 'effect' AND tenant != '*'
          AND window_end >= toDateTime(@from) AND window_end < toDateTime(@to)
    ) AS tenant_keys USING slo
    WHERE (target_tenant = '*' OR target_tenant = tenant)
      AND (target_service = '*' OR target_service = service)
      AND (target_model = '*' OR target_model = model)
      AND (target_variant = '*' OR target_variant = variant)
    GROUP BY tenant, slo
) AS tenant_incidents USING (tenant, slo)
ORDER BY tenant, slo
