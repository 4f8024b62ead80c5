-- Deferred steps, sensors and source observations.
--
-- A trigger carries what its check needs without reading the definitions:
-- the partition it was made for (key and, for time partitions, its window, so
-- templates can use {partition}, {start}, {end}), how often to check, and
-- whether a timeout skips (softFail) instead of failing. Step triggers now
-- also name their asset and partition, for display.

ALTER TABLE triggers
  ADD COLUMN partition_window jsonb,
  ADD COLUMN poll_interval_ms integer NOT NULL DEFAULT 5000 CHECK (poll_interval_ms > 0),
  ADD COLUMN soft_fail        boolean NOT NULL DEFAULT false,
  ADD COLUMN try_number       integer CHECK (try_number >= 1);
COMMENT ON COLUMN triggers.partition_window IS 'The partition''s time window {start, end} (ISO) for {start}/{end} templates; null when untimed.';
COMMENT ON COLUMN triggers.try_number IS 'For a deferred step: the try that deferred.';

-- A reschedule-mode sensor ends its try between checks; its timeout counts
-- from the first check of the wait, kept here across the tries.
ALTER TABLE steps ADD COLUMN wait_started_at timestamptz;
COMMENT ON COLUMN steps.wait_started_at IS 'Reschedule-mode waits: when the current wait began (its timeout counts from here).';

-- A source partition whose observation timed out.
ALTER TABLE partition_status DROP CONSTRAINT partition_status_status_check;
ALTER TABLE partition_status ADD CONSTRAINT partition_status_status_check
  CHECK (status IN ('missing', 'materializing', 'materialized', 'failed', 'stale', 'timed_out'));
