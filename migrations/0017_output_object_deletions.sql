-- Objects of deleted outputs that the object store still holds. A wipe (or an erasure) deletes the outputs rows and
-- queues their objects here in the same transaction, so what the database forgets is never forgotten by the clean-up:
-- the command deletes the objects right after it commits, and a reconciler retries whatever could not be deleted then
-- (the store was down, the process died), each row claimed under a lease so that two reconcilers never race on one.
CREATE TABLE output_object_deletions (
  id              bigserial PRIMARY KEY,
  storage_ref     text NOT NULL UNIQUE,
  -- What deleted the output: `wipe` or `retention` (with the asset and partition it held).
  reason          text NOT NULL,
  asset_key       text NOT NULL,
  partition_key   text NOT NULL DEFAULT '',
  requested_at    timestamptz NOT NULL DEFAULT now(),
  attempts        integer NOT NULL DEFAULT 0,
  -- Due from then on; a claim moves it past its lease, a failure past its backoff.
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  last_error      text
);
CREATE INDEX output_object_deletions_due_idx ON output_object_deletions (next_attempt_at);
