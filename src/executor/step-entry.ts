import type { TributaryError } from "../errors/index.js";
import type { StepDispatch } from "../execution/index.js";
import type { Lane } from "./lane.js";

/** loading its inputs → queued for a lane → running on one → done (reported). */
export type StepEntryState = "loading" | "queued" | "running" | "done";

/** A step the scheduler holds, from submit until its result is reported. */
export interface StepEntry {
  readonly dispatch: StepDispatch;
  state: StepEntryState;
  inputs: Readonly<Record<string, unknown>> | undefined;
  lane: Lane | undefined;
  startedAt: number | null;
  /** Why the step is being stopped (timeout, cancel, close), once it is. */
  stopping: TributaryError | undefined;
  timer: NodeJS.Timeout | undefined;
  graceTimer: NodeJS.Timeout | undefined;
}

export function newStepEntry(dispatch: StepDispatch): StepEntry {
  return {
    dispatch,
    state: "loading",
    inputs: undefined,
    lane: undefined,
    startedAt: null,
    stopping: undefined,
    timer: undefined,
    graceTimer: undefined,
  };
}
