-- Alerts: which sinks already accepted an alert (a retry after a partial
-- failure goes only to the others), and an index for listing recent alerts.

ALTER TABLE alerts ADD COLUMN sent_to jsonb NOT NULL DEFAULT '[]';
COMMENT ON COLUMN alerts.sent_to IS
  'Names of the sinks that accepted the alert; a retry sends only to the routed sinks not listed here.';
COMMENT ON COLUMN alerts.next_attempt_at IS
  'When the alert is due. A reconciler that claims it pushes this past its send time (a lease), so another reconciler does not send it meanwhile.';
CREATE INDEX alerts_created_idx ON alerts (created_at DESC, id DESC);
