import { retryDelayMs, shouldRetry } from "./retry.js";
import { evaluateTriggerRule } from "./trigger-rules.js";

/** Trigger rules with Airflow's semantics and retry policies with backoff: what the stores apply to steps. */
export const RUN_DECISIONS = { triggerRule: evaluateTriggerRule, shouldRetry, retryDelayMs } as const;
