/** A try's log file, named by its run, step and try (`<logsDir>/<run>/<step>-<try>.log`). */
export interface TryLogKey {
  readonly runId: string;
  readonly stepId: number;
  readonly tryNumber: number;
}

/** A try that has ended, with its asset and when it ended. */
export interface EndedTry extends TryLogKey {
  readonly assetKey: string;
  readonly endedAt: Date;
}

/** What log retention reads: which tries have ended, and when. */
export interface LogRetentionStore {
  /** Of the given tries, those that have ended (unfinished and unknown ones are left out). One statement. */
  endedTries(keys: readonly TryLogKey[]): Promise<EndedTry[]>;
}
