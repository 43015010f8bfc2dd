-- label_coverage: one row: source rows, class labels, distinct labelled rows, suppressed
-- rows, and source rows without a label (each source row must be labelled exactly once).
-- Slots: __source (table), __row_id (the engine's row id of the source
-- aliased s), __labels (row_id, eq_class). Parameters: none.
SELECT
  (SELECT COUNT(*) FROM __source) AS source_rows,
  (SELECT COUNT(*) FROM __labels) AS labels,
  (SELECT COUNT(DISTINCT row_id) FROM __labels) AS labelled_rows,
  (SELECT COUNT(*) FROM __labels WHERE eq_class < 0) AS suppressed,
  (
    SELECT COUNT(*)
    FROM __source AS s
    LEFT JOIN __labels AS l ON __row_id = l.row_id
    WHERE l.row_id IS NULL
  ) AS unlabelled
