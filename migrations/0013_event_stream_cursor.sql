-- Readers of the event stream no longer wait below the oldest running transaction of the cluster: their cursor
-- notes the transactions still running below its position and reads those transactions' events once they end.
COMMENT ON COLUMN events.tx_id IS
  'Inserting transaction. Ids are assigned before commit, so a plain id cursor can skip late commits; consumers read in (tx_id, id) order and keep the transactions still running below their position as pending, to read once they end.';
