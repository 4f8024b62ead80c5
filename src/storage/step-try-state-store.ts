/** Where one step try stands, as a log follower needs it: one small read. */
export interface StepTryState {
  /** The run's status (success, failed and canceled runs have ended). */
  readonly runStatus: string;
  /** The step's current try number: a later one than the followed try means that try is over. */
  readonly stepTryNumber: number;
  /** The followed try, or undefined when the step has no such try (any more). */
  readonly attempt?: {
    readonly state: string;
    readonly endedAt: Date | null;
    readonly error: unknown;
  };
}

/** Reads one step try's state without loading its run. */
export interface StepTryStateStore {
  /** Undefined when the step (or its run) is gone. */
  tryState(stepId: number, tryNumber: number): Promise<StepTryState | undefined>;
}
