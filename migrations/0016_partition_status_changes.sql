-- Which assets' partition statuses changed, one row per asset per writing statement, appended by triggers so that no
-- writer can forget it. A reader versions an asset's statuses by the set of its change rows (their number and a hash
-- of their ids and transactions): a late commit, a new write or a pruned row all change it, and reading it costs a
-- look at the asset's few change rows instead of a scan of its partition_status rows. Housekeeping keeps the newest
-- rows of each asset.
CREATE TABLE partition_status_changes (
  id        bigserial PRIMARY KEY,
  asset_key text NOT NULL,
  tx_id     xid8 NOT NULL DEFAULT pg_current_xact_id()
);
CREATE INDEX partition_status_changes_asset_idx ON partition_status_changes (asset_key, id);

CREATE FUNCTION partition_status_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO partition_status_changes (asset_key) SELECT DISTINCT asset_key FROM old_rows;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO partition_status_changes (asset_key)
    SELECT asset_key FROM new_rows UNION SELECT asset_key FROM old_rows;
  ELSE
    INSERT INTO partition_status_changes (asset_key) SELECT DISTINCT asset_key FROM new_rows;
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER partition_status_inserted AFTER INSERT ON partition_status
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION partition_status_changed();
CREATE TRIGGER partition_status_updated AFTER UPDATE ON partition_status
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION partition_status_changed();
CREATE TRIGGER partition_status_deleted AFTER DELETE ON partition_status
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION partition_status_changed();
