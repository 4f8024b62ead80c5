-- The folded partition statuses of large assets as an API server last derived them, with the version they were
-- derived at (a snapshot and the upstream assets read). A server that has not read an asset yet (after a start, or
-- behind a load balancer) brings this copy up to date by the change rows committed since, as it does its own cached
-- copy, instead of deriving every partition's staleness again. Only a cache: a row that no longer holds (another
-- partitions definition or code version, change rows pruned since, another cluster's snapshot) is read in full and
-- written again.
CREATE TABLE partition_status_summaries (
  asset_key           text PRIMARY KEY,
  definition          text NOT NULL,
  system_identifier   text NOT NULL,
  snapshot            text NOT NULL,
  upstream_asset_keys text[] NOT NULL,
  subsets             jsonb NOT NULL,
  updated_at          timestamptz NOT NULL DEFAULT now()
);
COMMENT ON COLUMN partition_status_summaries.definition IS
  'A digest of what the folded indices depend on: the asset''s code version and partition space (dynamic keys included).';
COMMENT ON COLUMN partition_status_summaries.system_identifier IS
  'The cluster whose transaction ids the snapshot names (pg_control_system()): a copy restored into another cluster does not hold.';
COMMENT ON COLUMN partition_status_summaries.snapshot IS
  'pg_current_snapshot() of the statement the statuses were derived in.';
COMMENT ON COLUMN partition_status_summaries.subsets IS
  'Per recorded status (materializing excluded), the partition-space indices holding it, as a serialized subset.';
