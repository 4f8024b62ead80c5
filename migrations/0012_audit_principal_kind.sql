-- The kind of whoever acted, as it was when the record was written: `user`, `service`, or `local` (an instance
-- without access control, or a command working on the database with its own credentials). A principal deleted later
-- keeps its kind in the trail. Null where nobody proven acted: a failed sign-in only names what was typed.
ALTER TABLE audit_events ADD COLUMN principal_kind text CHECK (principal_kind IN ('user', 'service', 'local'));
