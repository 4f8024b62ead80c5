-- Partition status for the API: which partitions have a step in flight.
-- Steps are history (hundreds of millions of rows over time); only the few
-- unfinished ones are indexed, so "materializing" costs what is running now.

CREATE INDEX steps_asset_unfinished_idx ON steps (asset_key, partition_key)
  WHERE state IN ('pending', 'scheduled', 'queued', 'running', 'up_for_retry', 'up_for_reschedule', 'deferred');
