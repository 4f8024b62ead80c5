-- Whose fault a failed try was: the user's code ('user') or Tributary's side ('infrastructure': a lost worker, an
-- unreachable API or store, a hand-back on shutdown, a queued timeout). Only user failures count against an asset's
-- retries; infrastructure failures are re-run on a budget of their own, counted per step.

ALTER TABLE step_tries
  ADD COLUMN failure_class text CHECK (failure_class IN ('user', 'infrastructure'));
COMMENT ON COLUMN step_tries.failure_class IS
  'Set when the try failed: ''user'' (its code threw, timed out, returned something bad, a check failed) or ''infrastructure'' (lost worker, unreachable API or store, hand-back, queued timeout). Null for tries that did not fail.';

ALTER TABLE steps
  ADD COLUMN infrastructure_failures integer NOT NULL DEFAULT 0 CHECK (infrastructure_failures >= 0);
COMMENT ON COLUMN steps.infrastructure_failures IS
  'Infrastructure failures re-run since the step was last cleared: the part of the infrastructure retry budget it used. Such tries also count in tries_before, so they never use up the asset''s retries.';
COMMENT ON COLUMN steps.tries_before IS
  'Tries that do not count against the retry policy: those before the last clear, hand-outs that never started, and infrastructure failures that were re-run.';
