import type { TributaryError } from "../errors/index.js";
import type { StepDispatch } from "../execution/index.js";

/** A step handed to a lane, with its inputs. */
export interface LaneStep {
  readonly dispatch: StepDispatch;
  readonly inputs: Readonly<Record<string, unknown>>;
}

/**
 * Somewhere steps run side by side: one worker child process, or the current
 * process. The scheduler decides what runs where and when to give up; a lane
 * only runs, aborts, and (when it can) dies.
 */
export interface Lane {
  readonly workerId: string;
  readonly pid: number;
  /** How many steps it runs at once. */
  readonly capacity: number;
  /** False while starting, retiring or dead: no new steps. */
  readonly accepting: boolean;
  run(steps: readonly LaneStep[]): void;
  /** Aborts the step's ctx.signal with `reason`; the step ends when its function returns. */
  abort(stepId: number, reason: TributaryError): void;
  /**
   * The step ignored its signal for the grace period. A process lane is
   * killed (every step in it ends; the scheduler reports them); the
   * in-process lane can only stop waiting for that one step.
   */
  readonly endsBy: "kill" | "abandon";
  kill(): void;
  abandon(stepId: number): void;
}
