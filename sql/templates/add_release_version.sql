-- add_release_version: the row table of a release made incremental numbers each row's
-- version; the first release's rows are version 1 (a refresh adds its own, numbered on).
-- Slots: __rows (the row table). Parameters: none.
ALTER TABLE __rows ADD COLUMN release_version INTEGER DEFAULT 1
