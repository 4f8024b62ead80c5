-- Execution-API tokens: each queued step try may get a short-lived bearer token (docs/execution-api.md). Only its
-- sha256 is stored (step_tries.token_hash, 0001); the expiry slides forward with each authenticated heartbeat.

ALTER TABLE step_tries ADD COLUMN token_expires_at timestamptz;
COMMENT ON COLUMN step_tries.token_expires_at IS
  'When the try''s execution-API token stops being accepted; each authenticated start or heartbeat moves it forward.';
CREATE UNIQUE INDEX step_tries_token_hash_idx ON step_tries (token_hash) WHERE token_hash IS NOT NULL;
