-- Asset checks: each check of a partition runs as its own step of the run, right after the asset's step, and
-- records a result. A failed blocking check fails its step (so the partition's downstream steps end
-- upstream_failed) and marks the partition's latest materialisation as failing its checks.

ALTER TABLE steps ADD COLUMN check_name text;
COMMENT ON COLUMN steps.check_name IS 'Set on the step of an asset check (the check''s name); null on an asset''s own step.';
ALTER TABLE steps DROP CONSTRAINT steps_run_id_asset_key_partition_key_map_index_key;
CREATE UNIQUE INDEX steps_run_asset_partition_map_check_key
  ON steps (run_id, asset_key, partition_key, map_index, coalesce(check_name, ''));

-- Results already have a table (0001); a result now also names the try that produced it and, when the check
-- threw, its error. event_id is the materialisation the check judged.
ALTER TABLE check_results
  ADD COLUMN try_number integer CHECK (try_number >= 1),
  ADD COLUMN error      jsonb;
CREATE UNIQUE INDEX check_results_step_try_key ON check_results (step_id, try_number) WHERE step_id IS NOT NULL;

-- The latest materialisation of a partition failed a blocking check (the check's name): automation does not
-- treat it as fresh data. Cleared when the partition is materialised again or the check passes on it.
ALTER TABLE partition_status ADD COLUMN failed_check text;
COMMENT ON COLUMN partition_status.failed_check IS
  'Name of a blocking check that failed on the latest materialisation; null when none did.';
