-- 0001_initial: the whole Tributary metadata schema (see docs/schema.sql for
-- the resulting catalogue and /work/shared/DESIGN.md for the concepts).
--
-- Conventions: snake_case; states are text + CHECK (cheap to extend in a later
-- migration); '' is the partition key of an unpartitioned asset; every hot
-- query has an index, usually a partial one on the small "active" subset.
-- Must run unchanged on Postgres 15+ and PGlite: no extensions.

-- ---------------------------------------------------------------------------
-- Definitions
-- ---------------------------------------------------------------------------

CREATE TABLE definition_snapshots (
  version      integer PRIMARY KEY CHECK (version > 0),
  content_hash text NOT NULL,
  graph        jsonb NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE definition_snapshots IS
  'Serialised asset graphs. version = previous latest + 1 (dense); a new row only when content_hash differs from the latest one.';
-- Not unique: definitions may return to an earlier graph (A -> B -> A), which is a new version.
CREATE INDEX definition_snapshots_content_hash_idx ON definition_snapshots (content_hash);

CREATE TABLE definition_files (
  path            text PRIMARY KEY,
  source_hash     text NOT NULL,
  status          text NOT NULL CHECK (status IN ('ok', 'error')),
  error           jsonb,
  warnings        jsonb NOT NULL DEFAULT '[]',
  problems        jsonb NOT NULL DEFAULT '[]',
  assets          jsonb NOT NULL DEFAULT '[]',
  checks          jsonb NOT NULL DEFAULT '[]',
  load_ms         integer NOT NULL DEFAULT 0 CHECK (load_ms >= 0),
  loaded_at       timestamptz NOT NULL DEFAULT now(),
  last_success_at timestamptz,
  CONSTRAINT definition_files_error_check CHECK ((status = 'error') = (error IS NOT NULL))
);
COMMENT ON TABLE definition_files IS
  'One row per definitions file: the latest load attempt (status, error, warnings, graph problems), and in assets and checks the specs of its last successful load.';
CREATE INDEX definition_files_errors_idx ON definition_files (path) WHERE status = 'error';

CREATE TABLE assets (
  key                text PRIMARY KEY,
  file               text NOT NULL,
  spec               jsonb NOT NULL,
  group_name         text,
  owner              text,
  is_source          boolean NOT NULL DEFAULT false,
  partitions_hash    text,
  first_seen_version integer NOT NULL,
  last_seen_version  integer NOT NULL,
  removed_at         timestamptz,
  paused             boolean NOT NULL DEFAULT false,
  paused_at          timestamptz,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT assets_seen_versions_check CHECK (first_seen_version <= last_seen_version)
);
COMMENT ON TABLE assets IS
  'Every asset ever defined. removed_at is set when it leaves the definitions; paused survives definition reloads.';
COMMENT ON COLUMN assets.partitions_hash IS
  'Hash of the partitions definition: a change means existing partition status must be re-validated.';
CREATE INDEX assets_file_idx ON assets (file);
CREATE INDEX assets_group_idx ON assets (group_name) WHERE removed_at IS NULL;
CREATE INDEX assets_owner_idx ON assets (owner) WHERE removed_at IS NULL;

CREATE TABLE dynamic_partitions (
  name          text NOT NULL,
  partition_key text NOT NULL CHECK (partition_key <> ''),
  position      bigserial NOT NULL,
  added_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (name, partition_key)
);
COMMENT ON TABLE dynamic_partitions IS
  'Keys of dynamic partitions definitions, in the order they were added (position).';
CREATE INDEX dynamic_partitions_position_idx ON dynamic_partitions (name, position);

-- ---------------------------------------------------------------------------
-- Runs and steps
-- ---------------------------------------------------------------------------

CREATE TABLE backfills (
  id                     uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  status                 text NOT NULL DEFAULT 'requested'
                         CHECK (status IN ('requested', 'running', 'completed', 'failed', 'canceling', 'canceled')),
  selection              jsonb NOT NULL,
  partitions             jsonb NOT NULL,
  max_concurrent_runs    integer NOT NULL DEFAULT 1 CHECK (max_concurrent_runs > 0),
  max_partitions_per_run integer NOT NULL DEFAULT 1 CHECK (max_partitions_per_run > 0),
  priority               integer NOT NULL DEFAULT -10,
  requested_count        bigint NOT NULL DEFAULT 0,
  done_count             bigint NOT NULL DEFAULT 0,
  failed_count           bigint NOT NULL DEFAULT 0,
  in_progress_count      bigint NOT NULL DEFAULT 0,
  cursor                 jsonb,
  tags                   jsonb NOT NULL DEFAULT '{}',
  error                  jsonb,
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now(),
  canceled_at            timestamptz,
  completed_at           timestamptz
);
COMMENT ON TABLE backfills IS
  'Requests to materialise partitions of assets, executed as a paced series of runs, oldest partitions first.';
COMMENT ON COLUMN backfills.partitions IS 'Partition subsets as ranges (never as long key lists).';
COMMENT ON COLUMN backfills.cursor IS 'How far run creation has progressed through the partition ranges.';
CREATE INDEX backfills_active_idx ON backfills (priority DESC, created_at)
  WHERE status IN ('requested', 'running', 'canceling');
CREATE INDEX backfills_created_idx ON backfills (created_at DESC);

CREATE TABLE runs (
  id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  status              text NOT NULL DEFAULT 'queued'
                      CHECK (status IN ('queued', 'running', 'success', 'failed', 'canceled')),
  origin              text NOT NULL CHECK (origin IN ('manual', 'schedule', 'automation', 'backfill', 'rerun')),
  backfill_id         uuid REFERENCES backfills (id) ON DELETE SET NULL,
  parent_run_id       uuid REFERENCES runs (id) ON DELETE SET NULL,
  idempotency_key     text UNIQUE,
  snapshot_version    integer NOT NULL,
  plan                jsonb NOT NULL,
  job_name            text,
  logical_date        timestamptz,
  data_interval_start timestamptz,
  data_interval_end   timestamptz,
  priority            integer NOT NULL DEFAULT 0,
  tags                jsonb NOT NULL DEFAULT '{}',
  max_active_steps    integer CHECK (max_active_steps > 0),
  cancel_requested_at timestamptz,
  created_at          timestamptz NOT NULL DEFAULT now(),
  started_at          timestamptz,
  ended_at            timestamptz,
  updated_at          timestamptz NOT NULL DEFAULT now(),
  error               jsonb,
  CONSTRAINT runs_data_interval_check CHECK (data_interval_start <= data_interval_end)
);
COMMENT ON TABLE runs IS 'One execution of a plan: a set of (asset, partition) steps ordered by dependencies.';
COMMENT ON COLUMN runs.idempotency_key IS
  'Set by schedules, automation and backfills (e.g. schedule:<job>:<logical date>) so that active-active reconcilers cannot create the same run twice.';
COMMENT ON COLUMN runs.job_name IS 'The asset job (Airflow DAG) the run belongs to, if any.';
CREATE INDEX runs_status_created_idx ON runs (status, created_at DESC);
CREATE INDEX runs_created_idx ON runs (created_at DESC);
CREATE INDEX runs_active_idx ON runs (priority DESC, created_at) WHERE status IN ('queued', 'running');
CREATE INDEX runs_cancel_requested_idx ON runs (cancel_requested_at)
  WHERE cancel_requested_at IS NOT NULL AND status IN ('queued', 'running');
CREATE INDEX runs_backfill_idx ON runs (backfill_id, status) WHERE backfill_id IS NOT NULL;
CREATE INDEX runs_parent_idx ON runs (parent_run_id) WHERE parent_run_id IS NOT NULL;
CREATE INDEX runs_job_logical_date_idx ON runs (job_name, logical_date DESC) WHERE job_name IS NOT NULL;

CREATE TABLE steps (
  id            bigserial PRIMARY KEY,
  run_id        uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  asset_key     text NOT NULL,
  partition_key text NOT NULL DEFAULT '',
  map_index     integer NOT NULL DEFAULT -1 CHECK (map_index >= -1),
  state         text NOT NULL DEFAULT 'pending'
                CHECK (state IN ('pending', 'scheduled', 'queued', 'running', 'success', 'failed', 'skipped',
                                 'up_for_retry', 'up_for_reschedule', 'deferred', 'upstream_failed', 'removed')),
  trigger_rule  text NOT NULL DEFAULT 'all_success'
                CHECK (trigger_rule IN ('all_success', 'all_failed', 'all_done', 'all_skipped', 'one_success',
                                        'one_failed', 'one_done', 'none_failed', 'none_failed_min_one_success',
                                        'none_skipped', 'always')),
  try_number    integer NOT NULL DEFAULT 0 CHECK (try_number >= 0),
  max_tries     integer NOT NULL DEFAULT 1 CHECK (max_tries >= 1),
  priority      integer NOT NULL DEFAULT 0,
  pool          text NOT NULL DEFAULT 'default_pool',
  pool_slots    integer NOT NULL DEFAULT 1 CHECK (pool_slots >= 1),
  executor      text NOT NULL DEFAULT 'local',
  queue         text,
  timeout_ms    bigint CHECK (timeout_ms > 0),
  retry_policy  jsonb,
  next_retry_at timestamptz,
  scheduled_at  timestamptz,
  queued_at     timestamptz,
  started_at    timestamptz,
  ended_at      timestamptz,
  heartbeat_at  timestamptz,
  worker_id     text,
  trigger_id    bigint,
  skip_reason   text,
  error         jsonb,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  UNIQUE (run_id, asset_key, partition_key, map_index)
);
COMMENT ON TABLE steps IS
  'One (asset, partition[, map index]) inside a run: Airflow''s task instance. Clearing sets state back to pending; try_number keeps counting.';
COMMENT ON COLUMN steps.pool IS 'Pool name; not a foreign key, so deleting a pool never blocks or cascades into history.';
COMMENT ON COLUMN steps.scheduled_at IS 'When the step last became runnable: dispatch latency = queued_at - scheduled_at.';
COMMENT ON COLUMN steps.next_retry_at IS 'When an up_for_retry or up_for_reschedule step becomes scheduled again.';
-- The reconciler's claim: highest priority runnable steps, FOR UPDATE SKIP LOCKED.
CREATE INDEX steps_scheduled_idx ON steps (priority DESC, id) WHERE state = 'scheduled';
CREATE INDEX steps_scheduled_pool_idx ON steps (pool, priority DESC, id) WHERE state = 'scheduled';
-- Pool occupancy (deferred counts only for pools with include_deferred).
CREATE INDEX steps_pool_occupancy_idx ON steps (pool) INCLUDE (pool_slots)
  WHERE state IN ('queued', 'running', 'deferred');
-- Trigger-rule resolution and per-run concurrency.
CREATE INDEX steps_pending_idx ON steps (run_id) WHERE state = 'pending';
CREATE INDEX steps_run_active_idx ON steps (run_id) WHERE state IN ('queued', 'running');
-- Housekeeping: due retries, zombies (stale heartbeats), stuck in queued.
CREATE INDEX steps_retry_due_idx ON steps (next_retry_at) WHERE state IN ('up_for_retry', 'up_for_reschedule');
CREATE INDEX steps_running_heartbeat_idx ON steps (heartbeat_at) WHERE state = 'running';
CREATE INDEX steps_queued_idx ON steps (queued_at) WHERE state = 'queued';
CREATE INDEX steps_worker_idx ON steps (worker_id) WHERE state IN ('queued', 'running');
-- History of one partition across runs.
CREATE INDEX steps_asset_partition_idx ON steps (asset_key, partition_key, id DESC);

CREATE TABLE step_deps (
  step_id          bigint NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
  upstream_step_id bigint NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
  PRIMARY KEY (step_id, upstream_step_id),
  CONSTRAINT step_deps_no_self_check CHECK (step_id <> upstream_step_id)
);
COMMENT ON TABLE step_deps IS 'Dependency edges between steps of the same run.';
CREATE INDEX step_deps_upstream_idx ON step_deps (upstream_step_id);

CREATE TABLE step_tries (
  id           bigserial PRIMARY KEY,
  step_id      bigint NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
  run_id       uuid NOT NULL,
  try_number   integer NOT NULL CHECK (try_number >= 1),
  state        text NOT NULL
               CHECK (state IN ('pending', 'scheduled', 'queued', 'running', 'success', 'failed', 'skipped',
                                'up_for_retry', 'up_for_reschedule', 'deferred', 'upstream_failed', 'removed')),
  executor     text,
  worker_id    text,
  hostname     text,
  pid          integer,
  queued_at    timestamptz,
  started_at   timestamptz,
  ended_at     timestamptz,
  heartbeat_at timestamptz,
  duration_ms  bigint CHECK (duration_ms >= 0),
  error        jsonb,
  log_ref      text,
  token_hash   text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  UNIQUE (step_id, try_number)
);
COMMENT ON TABLE step_tries IS 'Every try of every step; rows are never updated after the try ends.';
COMMENT ON COLUMN step_tries.token_hash IS 'Hash of the execution-API token scoped to this try (the token itself is never stored).';
CREATE INDEX step_tries_run_idx ON step_tries (run_id);

-- ---------------------------------------------------------------------------
-- Events, lineage, partition status, outputs
-- ---------------------------------------------------------------------------

CREATE TABLE events (
  id            bigserial PRIMARY KEY,
  tx_id         xid8 NOT NULL DEFAULT pg_current_xact_id(),
  kind          text NOT NULL
                CHECK (kind IN ('materialization', 'observation', 'external', 'check_result', 'planned', 'failure', 'wipe')),
  asset_key     text NOT NULL,
  partition_key text NOT NULL DEFAULT '',
  run_id        uuid,
  step_id       bigint,
  try_number    integer,
  data_version  text,
  code_version  text,
  metadata      jsonb NOT NULL DEFAULT '{}',
  created_at    timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE events IS
  'The asset event stream (materialisations, observations, external reports, check results). Append-only.';
COMMENT ON COLUMN events.tx_id IS
  'Inserting transaction. Ids are assigned before commit, so a plain id cursor can skip late commits; consumers read in (tx_id, id) order below pg_snapshot_xmin(pg_current_snapshot()).';
CREATE INDEX events_tx_idx ON events (tx_id, id);
CREATE INDEX events_asset_partition_idx ON events (asset_key, partition_key, id DESC);
CREATE INDEX events_asset_kind_idx ON events (asset_key, kind, id DESC);
CREATE INDEX events_run_idx ON events (run_id) WHERE run_id IS NOT NULL;

CREATE TABLE event_inputs (
  event_id               bigint NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  upstream_asset_key     text NOT NULL,
  upstream_partition_key text NOT NULL DEFAULT '',
  upstream_event_id      bigint,
  PRIMARY KEY (event_id, upstream_asset_key, upstream_partition_key)
);
COMMENT ON TABLE event_inputs IS
  'Run-level lineage: the upstream partitions (and their materialisation or observation events) a materialisation read.';
COMMENT ON COLUMN event_inputs.upstream_event_id IS 'NULL when the upstream partition had no recorded event (e.g. an unobserved source).';
CREATE INDEX event_inputs_upstream_event_idx ON event_inputs (upstream_event_id) WHERE upstream_event_id IS NOT NULL;
CREATE INDEX event_inputs_upstream_partition_idx ON event_inputs (upstream_asset_key, upstream_partition_key);

CREATE TABLE partition_status (
  asset_key                     text NOT NULL,
  partition_key                 text NOT NULL,
  status                        text NOT NULL
                                CHECK (status IN ('missing', 'materializing', 'materialized', 'failed', 'stale')),
  last_materialization_event_id bigint,
  last_run_id                   uuid,
  last_step_id                  bigint,
  data_version                  text,
  code_version                  text,
  materialized_at               timestamptz,
  updated_at                    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (asset_key, partition_key)
);
COMMENT ON TABLE partition_status IS
  'Current status per (asset, partition); a partition without a row is missing.';
CREATE INDEX partition_status_status_idx ON partition_status (asset_key, status, partition_key);

CREATE TABLE outputs (
  id            bigserial PRIMARY KEY,
  asset_key     text NOT NULL,
  partition_key text NOT NULL DEFAULT '',
  run_id        uuid NOT NULL,
  step_id       bigint NOT NULL,
  map_index     integer NOT NULL DEFAULT -1,
  try_number    integer NOT NULL CHECK (try_number >= 1),
  size_bytes    bigint NOT NULL CHECK (size_bytes >= 0),
  inline_value  jsonb,
  storage_ref   text,
  content_type  text NOT NULL DEFAULT 'application/json',
  created_at    timestamptz NOT NULL DEFAULT now(),
  UNIQUE (step_id, try_number),
  CONSTRAINT outputs_location_check CHECK ((inline_value IS NULL) <> (storage_ref IS NULL))
);
COMMENT ON TABLE outputs IS
  'Immutable step outputs: inline JSON up to the inline limit, else a reference into object storage. Outlive their runs (no FK) until retention removes them.';
CREATE INDEX outputs_asset_partition_idx ON outputs (asset_key, partition_key, id DESC);
CREATE INDEX outputs_run_idx ON outputs (run_id);
CREATE INDEX outputs_created_idx ON outputs (created_at);

CREATE TABLE check_results (
  id            bigserial PRIMARY KEY,
  asset_key     text NOT NULL,
  check_name    text NOT NULL,
  partition_key text NOT NULL DEFAULT '',
  run_id        uuid,
  step_id       bigint,
  event_id      bigint,
  passed        boolean NOT NULL,
  severity      text NOT NULL DEFAULT 'error' CHECK (severity IN ('warn', 'error')),
  blocking      boolean NOT NULL DEFAULT false,
  metadata      jsonb NOT NULL DEFAULT '{}',
  created_at    timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE check_results IS 'Results of data-quality checks; the latest per (asset, partition, check) decides blocking.';
CREATE INDEX check_results_latest_idx ON check_results (asset_key, partition_key, check_name, id DESC);
CREATE INDEX check_results_run_idx ON check_results (run_id) WHERE run_id IS NOT NULL;

-- ---------------------------------------------------------------------------
-- Scheduling resources
-- ---------------------------------------------------------------------------

CREATE TABLE pools (
  name             text PRIMARY KEY,
  slots            integer NOT NULL CHECK (slots >= 0),
  description      text NOT NULL DEFAULT '',
  include_deferred boolean NOT NULL DEFAULT false,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pools IS 'Named slot counts that steps compete for; default_pool always exists.';
INSERT INTO pools (name, slots, description) VALUES ('default_pool', 128, 'Default pool');

CREATE TABLE triggers (
  id               bigserial PRIMARY KEY,
  kind             text NOT NULL,
  args             jsonb NOT NULL DEFAULT '{}',
  step_id          bigint REFERENCES steps (id) ON DELETE CASCADE,
  asset_key        text,
  partition_key    text,
  status           text NOT NULL DEFAULT 'waiting'
                   CHECK (status IN ('waiting', 'fired', 'failed', 'timed_out', 'canceled')),
  next_check_at    timestamptz NOT NULL DEFAULT now(),
  timeout_at       timestamptz,
  lease_owner      text,
  lease_expires_at timestamptz,
  attempts         integer NOT NULL DEFAULT 0,
  last_checked_at  timestamptz,
  last_result      jsonb,
  payload          jsonb,
  error            jsonb,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  ended_at         timestamptz,
  CONSTRAINT triggers_lease_check CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL))
);
COMMENT ON TABLE triggers IS
  'Deferred async checks run by triggerers: a deferred step''s wait, or a source-asset observation. Leased to one triggerer at a time.';
-- Claim: unleased (NULL first) or lapsed leases.
CREATE INDEX triggers_claim_idx ON triggers (lease_expires_at NULLS FIRST, id) WHERE status = 'waiting';
CREATE INDEX triggers_owner_idx ON triggers (lease_owner) WHERE status = 'waiting';
CREATE INDEX triggers_due_idx ON triggers (next_check_at) WHERE status = 'waiting';
CREATE INDEX triggers_timeout_idx ON triggers (timeout_at) WHERE status = 'waiting' AND timeout_at IS NOT NULL;
CREATE INDEX triggers_step_idx ON triggers (step_id) WHERE step_id IS NOT NULL;
CREATE INDEX triggers_asset_idx ON triggers (asset_key, partition_key) WHERE asset_key IS NOT NULL;

-- ---------------------------------------------------------------------------
-- Automation, daemons, alerts
-- ---------------------------------------------------------------------------

CREATE TABLE automation_evaluations (
  id               bigserial PRIMARY KEY,
  asset_key        text NOT NULL,
  partition_subset text NOT NULL DEFAULT '',
  decision         text NOT NULL CHECK (decision IN ('requested', 'declined', 'skipped')),
  condition        text NOT NULL,
  reasons          jsonb NOT NULL DEFAULT '[]',
  run_id           uuid,
  snapshot_version integer,
  evaluated_at     timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE automation_evaluations IS 'Why did (or didn''t) this asset run: every automation decision with its reasons.';
COMMENT ON COLUMN automation_evaluations.partition_subset IS 'The evaluated partitions, serialised as ranges.';
CREATE INDEX automation_evaluations_asset_idx ON automation_evaluations (asset_key, id DESC);
CREATE INDEX automation_evaluations_run_idx ON automation_evaluations (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX automation_evaluations_time_idx ON automation_evaluations (evaluated_at);

CREATE TABLE cursors (
  name       text PRIMARY KEY,
  value      jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE cursors IS 'Named progress markers of the loops, e.g. the reconciler''s position in the event stream.';

CREATE TABLE component_heartbeats (
  id           text PRIMARY KEY,
  kind         text NOT NULL CHECK (kind IN ('reconciler', 'triggerer', 'worker', 'api')),
  hostname     text NOT NULL,
  pid          integer NOT NULL,
  started_at   timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now(),
  info         jsonb NOT NULL DEFAULT '{}'
);
COMMENT ON TABLE component_heartbeats IS 'Liveness of every running Tributary process; stale rows mean dead processes.';
CREATE INDEX component_heartbeats_kind_idx ON component_heartbeats (kind, heartbeat_at DESC);

CREATE TABLE alerts (
  id              bigserial PRIMARY KEY,
  cause_key       text NOT NULL UNIQUE,
  kind            text NOT NULL,
  asset_key       text,
  partition_key   text,
  run_id          uuid,
  owner           text,
  payload         jsonb NOT NULL DEFAULT '{}',
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
  attempts        integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  last_error      jsonb,
  sent_at         timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE alerts IS 'Outgoing notifications, deduplicated by cause_key (one alert per failure, deadline miss, ...).';
CREATE INDEX alerts_due_idx ON alerts (next_attempt_at) WHERE status = 'pending';
CREATE INDEX alerts_asset_idx ON alerts (asset_key, created_at DESC) WHERE asset_key IS NOT NULL;
