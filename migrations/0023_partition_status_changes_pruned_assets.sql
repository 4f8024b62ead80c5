-- What pruning deleted, per asset: the newest transaction whose change rows of the asset it deleted. A reader's
-- version of an asset is lost only when the change rows of that asset or of an upstream it read were pruned after its
-- snapshot, so a quiet asset's cached statuses outlive the pruning of busy assets' rows.
-- partition_status_changes_pruned keeps the newest over all assets.
CREATE TABLE partition_status_changes_pruned_assets (
  asset_key  text PRIMARY KEY,
  through_tx bigint NOT NULL CHECK (through_tx >= 0)
);
COMMENT ON TABLE partition_status_changes_pruned_assets IS
  'Per asset, the newest transaction id (as a number) among its partition_status_changes rows that pruning deleted.';
