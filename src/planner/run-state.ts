import { InputError } from "../errors/index.js";
import { STEP_STATES, isTerminal, type StepState } from "./step-states.js";

/** The run states {@link deriveRunState} decides; `queued` and `canceled` are the caller's. */
export type DerivedRunState = "running" | "success" | "failed";

/**
 * The state of a run from how many of its steps are in each state:
 * - `running` while any step is not terminal;
 * - `failed` once every step is terminal and any is `failed` or `upstream_failed`;
 * - `success` once every step is terminal and none failed (`skipped` is fine,
 *   `removed` steps are ignored; a run with no steps left succeeds).
 * Cancellation is decided by whoever cancels.
 *
 * @example deriveRunState({ success: 3, skipped: 1 }); // "success"
 * @example deriveRunState({ success: 3, running: 1, failed: 1 }); // "running"
 */
export function deriveRunState(stepStateCounts: Readonly<Partial<Record<StepState, number>>>): DerivedRunState {
  let anyFailed = false;
  for (const [state, count] of Object.entries(stepStateCounts)) {
    if (count === undefined || count === 0) continue;
    if (!(STEP_STATES as readonly string[]).includes(state)) {
      throw new InputError(`unknown step state "${state}"; expected one of ${STEP_STATES.join(", ")}`, {
        code: "STEP_STATE_INVALID",
      });
    }
    if (!Number.isSafeInteger(count) || count < 0) {
      throw new InputError(`step count for "${state}" must be a non-negative integer, got ${String(count)}`, {
        code: "STEP_STATE_INVALID",
      });
    }
    if (!isTerminal(state as StepState)) return "running";
    if (state === "failed" || state === "upstream_failed") anyFailed = true;
  }
  return anyFailed ? "failed" : "success";
}
