-- Mapped steps (runtime fan-out). An asset step whose function (or `map`) answers a list expands: one mapped step
-- per item (map_index 0..n-1) is added to the run when it ends, and the expanding step waits for them, then
-- gathers their outputs (in item order) into the partition's materialisation.

ALTER TABLE steps
  ADD COLUMN map_item   jsonb,
  ADD COLUMN map_label  text,
  ADD COLUMN map_count  integer CHECK (map_count >= 0),
  ADD COLUMN map_open   integer,
  ADD COLUMN map_inputs jsonb;
COMMENT ON COLUMN steps.map_item IS 'A mapped step''s item (map_index >= 0): what its try receives as ctx.map.item.';
COMMENT ON COLUMN steps.map_label IS 'A mapped step''s readable label, when the asset gives one.';
COMMENT ON COLUMN steps.map_count IS
  'Set on an expanded step (map_index -1): how many mapped steps it expanded into; it then waits for them and gathers their outputs. Null: not expanded.';
COMMENT ON COLUMN steps.map_open IS
  'An expanded step: its mapped steps that have not ended. Each completion of mapped steps decrements it (under the expanded step''s row lock); the step is judged when it reaches 0 or a mapped step fails, never by counting them all on every completion.';
COMMENT ON COLUMN steps.map_inputs IS
  'An expanded step''s lineage and code version at expansion, recorded with the gathered materialisation.';

-- Mapped steps' outputs are gathered by data version, without reading their values.
ALTER TABLE outputs ADD COLUMN data_version text;

-- The plan grows at run time: every expansion (or clear inside the run) is a new version of the run's plan.
ALTER TABLE runs ADD COLUMN plan_version integer NOT NULL DEFAULT 1 CHECK (plan_version >= 1);
COMMENT ON COLUMN runs.plan_version IS 'Bumped when the run''s steps change after it was created: an expansion, a clear inside the run.';
