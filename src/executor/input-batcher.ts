import { TributaryError, serializeError, type FailureClass, type SerializedError } from "../errors/index.js";
import type { ExecutionBackend, StepInputs } from "../execution/index.js";
import { describeTry, serializedStepError, STEP_ERROR_CODES, stepError } from "./step-errors.js";
import type { StepEntry } from "./step-entry.js";

export interface InputBatcherEvents {
  /** The step's inputs are there: it may be queued for a lane. */
  loaded(entry: StepEntry, inputs: Readonly<Record<string, unknown>>): void;
  /** Its inputs could not be loaded; the try can run again. `failureClass`: whose fault that is. */
  failed(entry: StepEntry, error: SerializedError, failureClass: FailureClass): void;
  /** A batch came back and every step in it was loaded or failed. */
  settled(): void;
}

/**
 * Loads the inputs of submitted steps: the steps added in one turn of the
 * event loop share one `backend.loadInputs` call. A step that stopped loading
 * meanwhile (canceled, closed) is passed over.
 */
export class InputBatcher {
  private pending: StepEntry[] = [];
  private scheduled = false;

  constructor(
    private readonly backend: ExecutionBackend,
    private readonly events: InputBatcherEvents,
  ) {}

  add(entry: StepEntry): void {
    this.pending.push(entry);
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => void this.load());
    }
  }

  private async load(): Promise<void> {
    this.scheduled = false;
    const batch = this.pending.filter((e) => e.state === "loading");
    this.pending = [];
    if (batch.length === 0) return;
    let loaded: ReadonlyMap<number, StepInputs>;
    try {
      loaded = await this.backend.loadInputs(batch.map((e) => e.dispatch));
      if (!(loaded instanceof Map)) throw new TypeError(`backend.loadInputs returned ${typeof loaded}, not a Map`);
    } catch (err) {
      for (const entry of batch) {
        if (entry.state !== "loading") continue;
        const error =
          err instanceof TributaryError
            ? err
            : stepError(
                STEP_ERROR_CODES.inputsFailed,
                entry.dispatch,
                `${describeTry(entry.dispatch)}: loading its inputs failed: ${err instanceof Error ? err.message : String(err)}`,
                err,
              );
        // The backend itself could not answer (the database or the execution API unreachable, after its retries).
        this.events.failed(entry, serializeError(error), "infrastructure");
      }
      return;
    }
    for (const entry of batch) {
      if (entry.state !== "loading") continue;
      const result = loaded.get(entry.dispatch.stepId);
      if (!result) {
        this.events.failed(
          entry,
          serializedStepError(
            STEP_ERROR_CODES.inputsFailed,
            entry.dispatch,
            `${describeTry(entry.dispatch)}: the backend returned no inputs for step ${entry.dispatch.stepId}`,
          ),
          "infrastructure",
        );
      } else if (!result.ok) {
        this.events.failed(entry, result.error, result.failureClass);
      } else {
        this.events.loaded(entry, result.inputs);
      }
    }
    this.events.settled();
  }
}
