-- Report fuse_timeline: every fuse command per target, in version order.
--
-- Source: fuse_commands FINAL (one row per target and version), issued_at in [@from, @to).
-- reason_verdict_ids are the verdicts that caused the command (join them to verdicts.id).
--
-- Parameters (bound client-side):
--   @from    Int64   range start, unix seconds (inclusive)
--   @to      Int64   range end, unix seconds (exclusive)
--   @target  String  only this target ("tenant/service/model/variant"); '' for all
SELECT
    target,
    version,
    issued_at,
    action,
    level,
    state,
    expires_at,
    fallback,
    throttle_fraction,
    reason_verdict_ids,
    key_id
FROM fuse_commands FINAL
WHERE issued_at >= toDateTime(@from) AND issued_at < toDateTime(@to)
  AND (@target = '' OR target = @target)
ORDER BY target, version
