/**
 * Whose fault a failed try is. `user`: the asset's code threw, ran past its own `timeout`, returned something that
 * cannot be stored, a check failed, or a wait it asked for timed out. `infrastructure`: Tributary's side gave way
 * — the worker was lost or stopped, the execution API, the database or the output store could not be reached, the
 * job was lost by the queue. Only user failures count against an asset's `retries`; infrastructure failures are
 * re-run with a budget of their own.
 */
export type FailureClass = "user" | "infrastructure";

export const FAILURE_CLASSES: readonly FailureClass[] = ["user", "infrastructure"];
