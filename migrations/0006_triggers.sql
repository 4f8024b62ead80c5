-- Trigger store: at most one waiting trigger per deferred step and per
-- observed (asset, partition, kind), so creating them is idempotent (ON
-- CONFLICT DO NOTHING) even when two processes create the same wait at once.
-- Finished triggers (fired, timed out, ...) stay as history and do not count.

CREATE UNIQUE INDEX triggers_waiting_step_key ON triggers (step_id)
  WHERE status = 'waiting' AND step_id IS NOT NULL;

CREATE UNIQUE INDEX triggers_waiting_observation_key ON triggers (asset_key, (coalesce(partition_key, '')), kind)
  WHERE status = 'waiting' AND step_id IS NULL AND asset_key IS NOT NULL;
