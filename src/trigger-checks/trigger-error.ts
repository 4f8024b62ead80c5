import { TributaryError, type ErrorLocation } from "../errors/index.js";

/**
 * A trigger could not be checked: its kind is not registered, its arguments or
 * templates are invalid, or the check failed or timed out. `code` says which:
 * TRIGGER_KIND_UNKNOWN, TRIGGER_ARGS_INVALID, TRIGGER_TEMPLATE_INVALID,
 * TRIGGER_TEMPLATE_FIELD_MISSING, TRIGGER_TEMPLATE_FIELD_UNKNOWN,
 * TRIGGER_CONNECTION_UNKNOWN, TRIGGER_CHECK_FAILED, TRIGGER_CHECK_TIMEOUT,
 * TRIGGER_CHECK_ABORTED, TRIGGER_KINDS_LOAD_FAILED (the process that runs
 * custom kinds could not import the definitions).
 */
export class TriggerError extends TributaryError {
  constructor(code: string, message: string, options: { cause?: unknown; location?: ErrorLocation } = {}) {
    super(code, message, options);
  }
}

/** Errors no later check can cure (how the wait is written): the trigger fails, and with it its step. */
export { PERMANENT_TRIGGER_ERRORS } from "../sdk/index.js";
