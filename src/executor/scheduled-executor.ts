import type { Executor, StepDispatch } from "../execution/index.js";
import type { StepScheduler } from "./step-scheduler.js";

/**
 * The part of an executor that its StepScheduler does: capacity, submitting and canceling steps. The local,
 * in-process and transactional executors differ only in their lanes and in how they start and close.
 */
export abstract class ScheduledExecutor implements Pick<Executor, "freeSlots" | "submit" | "cancel"> {
  protected abstract readonly scheduler: StepScheduler;

  freeSlots(): number {
    return this.scheduler.freeSlots();
  }

  submit(steps: readonly StepDispatch[]): void {
    this.scheduler.submit(steps);
  }

  cancel(stepIds: readonly number[], reason: string): void {
    this.scheduler.cancel(stepIds, reason);
  }

  /** Backend calls made for started/finished reports (for tests and the benchmark). */
  get reportCalls(): { readonly started: number; readonly finished: number } {
    return this.scheduler.reportCalls;
  }
}
