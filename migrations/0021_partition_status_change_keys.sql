-- The partitions each change row's statement wrote, so that a reader holding an asset's statuses as of a snapshot
-- derives again only the partitions written since (and the downstream partitions that read them), instead of every
-- partition of the asset. A statement that writes more than 1 000 partitions of an asset leaves the keys null: a
-- reader then reads the asset in full.
ALTER TABLE partition_status_changes
  ADD COLUMN partition_keys text[],
  ADD COLUMN created_at timestamptz NOT NULL DEFAULT clock_timestamp();
COMMENT ON COLUMN partition_status_changes.partition_keys IS
  'The partitions of the asset the statement inserted, updated or deleted; null when more than 1 000.';
COMMENT ON COLUMN partition_status_changes.created_at IS
  'When the row was appended: pruning keeps rows younger than a minute, so a reader that looks again within it can find every change since.';

-- The newest transaction whose change rows pruning deleted. A reader that read statuses in a snapshot whose oldest
-- running transaction is newer than this has lost no change row committed after its snapshot.
CREATE TABLE partition_status_changes_pruned (
  singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  through_tx  bigint NOT NULL DEFAULT 0 CHECK (through_tx >= 0)
);
COMMENT ON TABLE partition_status_changes_pruned IS
  'One row: the newest transaction id (as a number) among the partition_status_changes rows pruning deleted.';
INSERT INTO partition_status_changes_pruned DEFAULT VALUES;

CREATE OR REPLACE FUNCTION partition_status_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO partition_status_changes (asset_key, partition_keys)
    SELECT asset_key, CASE WHEN count(*) <= 1000 THEN array_agg(partition_key) END FROM old_rows GROUP BY asset_key;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO partition_status_changes (asset_key, partition_keys)
    SELECT asset_key, CASE WHEN count(*) <= 1000 THEN array_agg(partition_key) END
    FROM (SELECT asset_key, partition_key FROM new_rows UNION SELECT asset_key, partition_key FROM old_rows) written
    GROUP BY asset_key;
  ELSE
    INSERT INTO partition_status_changes (asset_key, partition_keys)
    SELECT asset_key, CASE WHEN count(*) <= 1000 THEN array_agg(partition_key) END FROM new_rows GROUP BY asset_key;
  END IF;
  RETURN NULL;
END;
$$;
