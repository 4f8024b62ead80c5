-- History archives: runs past their history retention (with their steps, tries, waits, events, lineage rows, check
-- results and logs) and events of no run, written to the output store as gzip JSON Lines, one object per batch, each
-- batch of one day (the day a run was created, an event recorded), then deleted here. A restore brings a day back.
CREATE TABLE history_archives (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  day          date NOT NULL,
  -- writing: claimed, its object being written, its rows still here; archived: the object holds the rows, deleted
  -- here; restored: the rows are back here, the object deleted.
  state        text NOT NULL DEFAULT 'writing' CHECK (state IN ('writing', 'archived', 'restored')),
  storage_ref  text,
  runs         integer NOT NULL DEFAULT 0,
  events       integer NOT NULL DEFAULT 0,
  -- Every row of every table in the object, and the log files.
  row_count    integer NOT NULL DEFAULT 0,
  log_count    integer NOT NULL DEFAULT 0,
  size_bytes   bigint NOT NULL DEFAULT 0,
  archived_by  text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  archived_at  timestamptz,
  restored_at  timestamptz,
  restored_by  text
);
CREATE INDEX history_archives_day_idx ON history_archives (day, created_at);
CREATE INDEX history_archives_writing_idx ON history_archives (created_at) WHERE state = 'writing';

-- What a writing archive has claimed: a run or an event is in at most one archive at a time.
CREATE TABLE history_archive_claims (
  archive_id  uuid NOT NULL REFERENCES history_archives (id) ON DELETE CASCADE,
  run_id      uuid UNIQUE,
  event_id    bigint UNIQUE,
  CHECK ((run_id IS NULL) <> (event_id IS NULL))
);
CREATE INDEX history_archive_claims_archive_idx ON history_archive_claims (archive_id);

-- The partitions whose try logs an archive holds: an erasure request of one of them removes those logs from it.
CREATE TABLE history_archive_log_partitions (
  archive_id     uuid NOT NULL REFERENCES history_archives (id) ON DELETE CASCADE,
  asset_key      text NOT NULL,
  partition_key  text NOT NULL,
  PRIMARY KEY (asset_key, partition_key, archive_id)
);
CREATE INDEX history_archive_log_partitions_archive_idx ON history_archive_log_partitions (archive_id);

-- Days brought back by a restore: not archived again until the hold ends.
CREATE TABLE history_holds (
  day        date PRIMARY KEY,
  held_until timestamptz NOT NULL,
  held_by    text
);

-- Ended runs and events of no run (observations, reports, wipes), oldest first, for their retention.
CREATE INDEX runs_ended_created_idx ON runs (created_at, id) WHERE status IN ('success', 'failed', 'canceled');
CREATE INDEX events_runless_created_idx ON events (created_at, id) WHERE run_id IS NULL;
