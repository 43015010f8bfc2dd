-- label_coverage: one row: source rows, class labels, labels that name no source row,
-- suppressed rows, and source rows without a label. Each source row is labelled exactly
-- once when the labels are as many as the source rows, every label names a source row and
-- no source row lacks one (n labels on n rows, none left out: one each), which one full
-- join of the two tells, without counting the distinct row ids of the labels (a hash
-- aggregate over every label beside the join: 1,000,000 rows, 0.14 s against 0.23 s). The
-- full join is the run's labelled source (labelled), made once and read here.
-- Slots: __source (table), __labelled (the labelled source: sbc_row_id, sbc_label_id,
-- sbc_eq_class). Parameters: none.
SELECT
  (SELECT COUNT(*) FROM __source) AS source_rows,
  COUNT(l.sbc_label_id) AS labels,
  COUNT(*) FILTER (WHERE l.sbc_row_id IS NULL) AS strays,
  COUNT(*) FILTER (WHERE l.sbc_eq_class < 0) AS suppressed,
  COUNT(*) FILTER (WHERE l.sbc_label_id IS NULL) AS unlabelled
FROM __labelled AS l
