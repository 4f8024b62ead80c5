-- Execution core: counters that let one transaction finish a step and decide
-- its downstream steps without scanning, and slot accounting for pools.

-- upstream_total: how many steps a step reads (0 = a root, runnable when its run starts).
-- The trigger rule of a pending step is decided from its upstreams' states,
-- counted when one of them ends, under a lock on the pending step.
ALTER TABLE steps
  ADD COLUMN upstream_total           integer NOT NULL DEFAULT 0 CHECK (upstream_total >= 0),
  ADD COLUMN tries_before             integer NOT NULL DEFAULT 0 CHECK (tries_before >= 0),
  ADD COLUMN max_concurrency          integer CHECK (max_concurrency > 0),
  ADD COLUMN depth                    integer NOT NULL DEFAULT 0 CHECK (depth >= 0);
COMMENT ON COLUMN steps.tries_before IS
  'Tries that do not count against the retry policy: those before the last clear, and hand-outs that never started.';
COMMENT ON COLUMN steps.max_concurrency IS 'The asset''s maxConcurrency when the run was planned.';

COMMENT ON COLUMN steps.depth IS
  'Longest upstream path within the run. Among equal priorities deeper steps go first, so chains finish (and hand off) quickly instead of waiting behind every root.';

DROP INDEX steps_scheduled_idx;
CREATE INDEX steps_scheduled_idx ON steps (priority DESC, depth DESC, id) WHERE state = 'scheduled';
-- Indexes the dispatch path does not use cost a write per state change of every step.
DROP INDEX steps_scheduled_pool_idx;
DROP INDEX steps_pool_occupancy_idx;
DROP INDEX steps_worker_idx;
DROP INDEX steps_pending_idx;
CREATE INDEX steps_scheduled_age_idx ON steps (scheduled_at, id) WHERE state = 'scheduled';
CREATE INDEX steps_asset_active_idx ON steps (asset_key) WHERE state IN ('queued', 'running');

-- Per run: counts kept by the transactions that move steps, so "is the run
-- finished?" and "how many steps are active?" never count rows.
ALTER TABLE runs
  ADD COLUMN steps_total  integer NOT NULL DEFAULT 0 CHECK (steps_total >= 0),
  ADD COLUMN steps_done   integer NOT NULL DEFAULT 0 CHECK (steps_done >= 0),
  ADD COLUMN steps_failed integer NOT NULL DEFAULT 0 CHECK (steps_failed >= 0),
  ADD COLUMN steps_active integer NOT NULL DEFAULT 0 CHECK (steps_active >= 0),
  ADD COLUMN max_active_runs integer CHECK (max_active_runs > 0),
  ADD CONSTRAINT runs_steps_progress_check CHECK (steps_done <= steps_total);
CREATE INDEX runs_job_active_idx ON runs (job_name) WHERE status = 'running';

-- Slots handed out per pool, changed in the same transaction as the steps
-- that take or return them; the dispatch query locks the pool rows.
ALTER TABLE pools ADD COLUMN occupied_slots integer NOT NULL DEFAULT 0 CHECK (occupied_slots >= 0);
