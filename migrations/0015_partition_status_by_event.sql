-- The erasure walk follows each upstream partition's readers to the partitions whose latest materialisation they
-- are: from an event to the partition that holds it as its latest, by index.
CREATE INDEX partition_status_latest_event_idx ON partition_status (last_materialization_event_id)
  WHERE last_materialization_event_id IS NOT NULL;
