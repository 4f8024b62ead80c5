import type { AssetContext } from "./context.js";

/** Why a try failed, as the callbacks see it (the error as recorded for the try). */
export interface StepFailure {
  readonly name: string;
  /** `USER_CODE_ERROR` for what the function threw; `STEP_TIMEOUT`, `STEP_CANCELED`… for Tributary's own. */
  readonly code: string;
  readonly message: string;
  readonly stack?: string;
}

/** What onRetry is told about the retry to come. */
export interface RetryInfo {
  /** The try number the retry will have. */
  readonly nextTry: number;
  /** The last try the step may reach. */
  readonly lastTry: number;
}

/**
 * Per-asset hooks, run in the worker process after a try's outcome is known
 * and reported: they cannot change it. A hook that throws, or runs past its
 * time limit (`callbackTimeout`, default 30 s), is logged to the step's log.
 * Hooks are functions: they are not part of the serialised definitions.
 *
 * @example
 * // given notifyPager: (text: string) => Promise<void>, load: (window: { start: Date; end: Date }) => Promise<number>
 * asset({ key: "sales/orders", retries: 2,
 *   onFailure: async (ctx, error) => notifyPager(`${ctx.assetKey} ${ctx.partition.key}: ${error.message}`) },
 *   async (ctx) => load(ctx.partition.window!));
 */
export interface AssetCallbacks {
  /**
   * The try succeeded.
   * @example asset({ key: "sales/orders", onSuccess: (ctx) => ctx.log.info("orders are in") }, async () => ({ rows: 42 }))
   */
  onSuccess?: (ctx: AssetContext) => unknown;
  /**
   * The try failed and will not be retried (retries exhausted, or a failure that is never retried such as a cancel).
   * @example
   * // given page: (text: string) => Promise<void>
   * asset({ key: "sales/orders", onFailure: (ctx, error) => page(`${ctx.assetKey}: ${error.code} ${error.message}`) }, async () => 1);
   */
  onFailure?: (ctx: AssetContext, error: StepFailure) => unknown;
  /**
   * The try failed and the step will be tried again.
   * @example
   * asset({ key: "sales/orders", retries: 3,
   *   onRetry: (ctx, error, retry) => ctx.log.warn(`try ${retry.nextTry} of ${retry.lastTry} follows`, { error: error.message }) },
   *   async () => ({ rows: 42 }));
   */
  onRetry?: (ctx: AssetContext, error: StepFailure, retry: RetryInfo) => unknown;
}

/** Default time limit of one callback. */
export const DEFAULT_CALLBACK_TIMEOUT_MS = 30_000;

/** The hooks of a definition, with their time limit. */
export interface DefinitionCallbacks extends Readonly<AssetCallbacks> {
  readonly timeoutMs: number;
}
