-- pending_reasons: an incremental release's pending rows by reason.
-- Slots: __pending (the pending table). Parameters: none.
SELECT reason, SUM(sbc_rows) AS sbc_rows
FROM __pending
GROUP BY reason
ORDER BY reason
