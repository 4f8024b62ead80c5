-- No query looks outputs up by run (they are read by step, by asset and partition, and by age), and every
-- materialisation wrote this index: one index entry fewer per step recorded.
DROP INDEX outputs_run_idx;
