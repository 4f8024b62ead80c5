/**
 * Step (task instance) states. A step waits in `pending` for its
 * upstreams, is `scheduled` when it may run, `queued` once handed to the
 * executor, then `running`, and ends `success`, `failed`, `skipped`,
 * `upstream_failed` or `removed`; `up_for_retry`, `up_for_reschedule` and
 * `deferred` wait to be scheduled again.
 */
export const STEP_STATES = [
  "pending",
  "scheduled",
  "queued",
  "running",
  "success",
  "failed",
  "skipped",
  "up_for_retry",
  "up_for_reschedule",
  "deferred",
  "upstream_failed",
  "removed",
] as const;
export type StepState = (typeof STEP_STATES)[number];

/** States a step does not leave on its own: only clearing (→ pending) moves it on. */
export const TERMINAL_STEP_STATES: readonly StepState[] = ["success", "failed", "skipped", "upstream_failed", "removed"];

const TERMINAL = new Set<StepState>(TERMINAL_STEP_STATES);

export function isTerminal(state: StepState): boolean {
  return TERMINAL.has(state);
}

/**
 * Ways out of every unfinished state that the run itself forces: its run is
 * canceled, or `ctx.skip()` (`skipped`), or the asset left the definitions
 * while the run was open (`removed`).
 */
const FORCED_ENDS: readonly StepState[] = ["skipped", "removed"];

/**
 * Allowed transitions, from → to (never to itself). `failed` is reachable
 * once a try was handed out: the try failed, timed out, became a zombie, was
 * killed by a cancel, or its trigger timed out. Every terminal state goes
 * back to `pending` when cleared; the try number keeps counting.
 */
export const STEP_TRANSITIONS: Readonly<Record<StepState, readonly StepState[]>> = {
  // The trigger rule decides: run, or end as skipped / upstream_failed.
  pending: ["scheduled", "upstream_failed", ...FORCED_ENDS],
  // Back to pending when an upstream is cleared before this step was handed out.
  scheduled: ["queued", "pending", ...FORCED_ENDS],
  // Requeued when stuck in the executor's queue; a start failure counts as a failed try.
  queued: ["running", "scheduled", "up_for_retry", "failed", ...FORCED_ENDS],
  running: ["success", "failed", "up_for_retry", "up_for_reschedule", "deferred", ...FORCED_ENDS],
  // At next_retry_at; `failed` when the run is canceled in between (the last try failed).
  up_for_retry: ["scheduled", "failed", ...FORCED_ENDS],
  up_for_reschedule: ["scheduled", "failed", ...FORCED_ENDS],
  // When the trigger fires; `failed` when it times out.
  deferred: ["scheduled", "failed", ...FORCED_ENDS],
  success: ["pending"],
  failed: ["pending"],
  skipped: ["pending"],
  upstream_failed: ["pending"],
  removed: ["pending"],
};

const ALLOWED = new Map<StepState, Set<StepState>>(STEP_STATES.map((from) => [from, new Set(STEP_TRANSITIONS[from])]));

/**
 * Whether a step may move from `from` to `to`.
 * @example canTransition("running", "success"); // true
 * @example canTransition("success", "pending"); // true: clearing
 * @example canTransition("pending", "running"); // false: it must be scheduled and queued first
 */
export function canTransition(from: StepState, to: StepState): boolean {
  return ALLOWED.get(from)?.has(to) ?? false;
}
