-- Automation: what the tick remembers per asset between evaluations, and
-- which tick wrote an evaluation record.

CREATE TABLE automation_state (
  asset_key  text PRIMARY KEY,
  state      jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE automation_state IS
  'Per asset: what automation remembers between ticks (when it last evaluated, cron ticks handled, upstream updates not yet acted on, the last decision''s fingerprint). Written only by the reconciler that holds the automation lease.';

ALTER TABLE automation_evaluations ADD COLUMN tick bigint NOT NULL DEFAULT 0;
COMMENT ON COLUMN automation_evaluations.tick IS 'The automation tick (a dense sequence) that made the decision; records are written only when a decision changes.';
CREATE INDEX automation_evaluations_asset_partition_idx ON automation_evaluations (asset_key, partition_subset, id DESC);
