-- Erasure requests: "remove what was derived from these partitions of a source, and prove it". A request records the
-- impact it was computed with (erasure_items), is carried out by reconcilers (one at a time per request, under a
-- lease), and keeps every deletion (erasure_deletions) and every call of an asset's erase hook (erasure_hook_calls)
-- as its proof. Requests are never deleted by Tributary.
CREATE TABLE erasure_requests (
  id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  -- planned → erasing → rematerialising → done; failed (a hook threw, a re-materialisation failed) until retried.
  state                 text NOT NULL DEFAULT 'planned'
                        CHECK (state IN ('planned', 'erasing', 'rematerialising', 'done', 'failed')),
  asset_key             text NOT NULL,
  partition_keys        jsonb NOT NULL,
  reason                text,
  requested_by          text,
  -- The backfill that re-materialises the erased partitions (null until launched, or when nothing can be).
  backfill_id           uuid REFERENCES backfills (id),
  -- Why the request failed, or what it waits for (a run writing an impacted partition).
  message               text,
  attempts              integer NOT NULL DEFAULT 0,
  lease_owner           text,
  lease_until           timestamptz,
  next_attempt_at       timestamptz NOT NULL DEFAULT now(),
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now(),
  finished_at           timestamptz
);
CREATE INDEX erasure_requests_due_idx ON erasure_requests (next_attempt_at) WHERE state IN ('planned', 'erasing', 'rematerialising');
CREATE INDEX erasure_requests_created_idx ON erasure_requests (created_at DESC, id);

-- The partitions a request erases: the source's and every derived one, as the impact named them when requested.
CREATE TABLE erasure_items (
  request_id            uuid NOT NULL REFERENCES erasure_requests (id) ON DELETE CASCADE,
  asset_key             text NOT NULL,
  partition_key         text NOT NULL,
  -- The impacted materialisation: the event, run and step that wrote the data (null when it had none).
  event_id              bigint,
  run_id                uuid,
  step_id               bigint,
  -- When its outputs and logs were deleted and it was marked erased.
  erased_at             timestamptz,
  -- The materialisation that replaced it, once re-materialised.
  replaced_by_event_id  bigint,
  replaced_by_run_id    uuid,
  replaced_at           timestamptz,
  -- Not re-materialised: the asset is no longer defined, or the partition no longer exists.
  skipped_reason        text,
  PRIMARY KEY (request_id, asset_key, partition_key)
);

-- Everything a request deleted: stored outputs (inline or in the object store), their objects, try logs.
CREATE TABLE erasure_deletions (
  id                    bigserial PRIMARY KEY,
  request_id            uuid NOT NULL REFERENCES erasure_requests (id) ON DELETE CASCADE,
  -- `output` (a stored output row; `ref` its object, if any), `object` (that object, deleted from the object
  -- store), `log` (a try's log file).
  kind                  text NOT NULL CHECK (kind IN ('output', 'object', 'log')),
  asset_key             text NOT NULL,
  partition_key         text NOT NULL,
  run_id                uuid,
  step_id               bigint,
  try_number            integer,
  ref                   text,
  size_bytes            bigint,
  deleted_at            timestamptz NOT NULL,
  UNIQUE (request_id, kind, ref)
);
CREATE INDEX erasure_deletions_request_idx ON erasure_deletions (request_id, id);

-- Each call of an asset's `erase` hook: once per asset and request when it succeeds; a failed call is kept, and a
-- retry of the request calls again.
CREATE TABLE erasure_hook_calls (
  id                    bigserial PRIMARY KEY,
  request_id            uuid NOT NULL REFERENCES erasure_requests (id) ON DELETE CASCADE,
  asset_key             text NOT NULL,
  partition_keys        jsonb NOT NULL,
  attempt               integer NOT NULL,
  started_at            timestamptz NOT NULL,
  ended_at              timestamptz,
  -- running, success, failed
  state                 text NOT NULL CHECK (state IN ('running', 'success', 'failed')),
  error                 text,
  -- What the hook logged (ctx.log), at most a few hundred lines.
  log                   jsonb NOT NULL DEFAULT '[]',
  UNIQUE (request_id, asset_key, attempt)
);

-- An erased partition: its data was removed by an erasure request; it is re-materialised from the cleaned source.
ALTER TABLE partition_status DROP CONSTRAINT partition_status_status_check;
ALTER TABLE partition_status ADD CONSTRAINT partition_status_status_check
  CHECK (status IN ('missing', 'materializing', 'materialized', 'failed', 'stale', 'timed_out', 'erased'));
