-- What the automation loop holds in memory per asset (its materialised and failed partitions), as it stood at the
-- automation cursor: a reconciler that takes the automation lease over reads these few rows and the events after
-- the cursor, instead of every partition_status row.
CREATE TABLE automation_partitions (
  asset_key     text PRIMARY KEY,
  -- The asset's partitions definition the ranges were taken in; another one (or none stored) is read from
  -- partition_status instead.
  partitions    text NOT NULL,
  -- Inclusive key ranges, in the definition's order: [["2025-01-01", "2025-03-31"], …].
  materialized  jsonb NOT NULL,
  failed        jsonb NOT NULL,
  updated_at    timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE automation_partitions IS
  'Per asset: the materialised and failed partitions the automation loop holds, as of the automation cursor. Written with the cursor, only by the reconciler that holds the automation lease.';
