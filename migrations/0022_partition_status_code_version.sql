-- The partitions of an asset whose latest materialisation ran another code version than the asset's current one
-- (codeVersionChanged()) are found by index, in proportion to how many there are, instead of by reading every
-- recorded partition of the asset on each full automation evaluation. Only rows with a code version are indexed:
-- assets without one cost nothing more to write.
CREATE INDEX partition_status_code_version_idx ON partition_status (asset_key, code_version) WHERE code_version IS NOT NULL;
