-- Access control: who may call the API (users and service accounts), how they prove it (API tokens, sign-in
-- sessions, signed access tokens), what they may do (roles granted per team, teams owning asset groups or owners),
-- and what they did (the audit trail). Secrets are never stored: tokens and sessions as their sha256, passwords as
-- argon2id hashes.

CREATE TABLE principals (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name          text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$'),
  kind          text NOT NULL CHECK (kind IN ('user', 'service')),
  password_hash text,
  -- An OIDC identity (issuer and subject) this user signs in as.
  oidc_issuer   text,
  oidc_subject  text,
  disabled_at   timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now(),
  CHECK (kind = 'user' OR password_hash IS NULL),
  UNIQUE (oidc_issuer, oidc_subject)
);
COMMENT ON TABLE principals IS 'Users (people, who may sign in) and service accounts (scripts, which only hold tokens).';

CREATE TABLE api_tokens (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  principal_id uuid NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
  token_hash   text NOT NULL UNIQUE,
  -- The first characters of the token, to tell tokens apart in listings.
  prefix       text NOT NULL,
  description  text NOT NULL DEFAULT '',
  expires_at   timestamptz,
  revoked_at   timestamptz,
  last_used_at timestamptz,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_tokens_principal_idx ON api_tokens (principal_id);

CREATE TABLE teams (
  name       text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$'),
  created_at timestamptz NOT NULL DEFAULT now()
);

-- A team owns the assets of a group, or the assets whose `owner` is a value.
CREATE TABLE team_ownership (
  team  text NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
  kind  text NOT NULL CHECK (kind IN ('group', 'owner')),
  value text NOT NULL CHECK (length(value) BETWEEN 1 AND 200),
  PRIMARY KEY (team, kind, value)
);

-- A role granted to a principal, on one team's assets or (team null) on every asset and the instance itself.
CREATE TABLE grants (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  principal_id uuid NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
  role         text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
  team         text REFERENCES teams (name) ON DELETE CASCADE,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX grants_unique_idx ON grants (principal_id, role, coalesce(team, ''));

CREATE TABLE sessions (
  id_hash      text PRIMARY KEY,
  principal_id uuid NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
  method       text NOT NULL CHECK (method IN ('password', 'oidc')),
  expires_at   timestamptz NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sessions_principal_idx ON sessions (principal_id);

-- Keys that sign the short-lived access tokens of /auth/token, shared by every API server of the deployment.
CREATE TABLE signing_keys (
  id         text PRIMARY KEY,
  secret     text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE audit_events (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at             timestamptz NOT NULL DEFAULT now(),
  principal_id   uuid,
  principal_name text,
  token_id       uuid,
  -- What was asked: a mutation's name, `signIn`, `signOut`, `createToken`…
  action         text NOT NULL,
  outcome        text NOT NULL CHECK (outcome IN ('success', 'denied', 'failed')),
  assets         jsonb NOT NULL DEFAULT '[]',
  partitions     jsonb NOT NULL DEFAULT '[]',
  address        text,
  detail         jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_events_at_idx ON audit_events (at);
CREATE INDEX audit_events_principal_idx ON audit_events (principal_name, at);
COMMENT ON TABLE audit_events IS 'Append-only: every mutation and sign-in, written in the transaction of its effect.';

-- The trail cannot be edited: updates are refused by the database itself.
CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_events is append-only';
END
$$;
CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
  FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
