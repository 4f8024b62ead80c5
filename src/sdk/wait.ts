import { InputError } from "../errors/index.js";
import { parseDuration, type Duration } from "./duration.js";

/**
 * How a step waits for a trigger (Airflow's sensor modes):
 * - `deferrable` (default): the step ends its try and frees its slot; the triggerer checks; the step is re-entered with the
 *   payload when it fires;
 * - `reschedule`: the worker checks once per try; between checks the step is `up_for_reschedule` and holds no slot;
 * - `poke`: the worker checks every interval inside the try, holding its slot (only for waits of seconds).
 */
export type WaitMode = "deferrable" | "reschedule" | "poke";

export const WAIT_MODES: readonly WaitMode[] = ["deferrable", "reschedule", "poke"];

/** How long and how often ctx.defer waits for a trigger. */
export interface WaitOptions {
  /**
   * How long the wait may last in all (default 7 days); past it the step fails, or is skipped with `softFail`.
   * @example
   * asset({ key: "partner/import" }, async (ctx) => ctx.defer(fileExists("/landing/{partition}.csv"), { timeout: "6h" }));
   */
  timeout?: Duration;
  /**
   * Time between checks (default 5 s deferrable, 60 s reschedule, 10 s poke).
   * @example
   * asset({ key: "partner/import" }, async (ctx) => ctx.defer(httpOk("https://partner.example/ready"), { interval: "1m" }));
   */
  interval?: Duration;
  /**
   * On timeout the step is skipped instead of failed (downstream follows its trigger rule).
   * @example
   * asset({ key: "partner/import" }, async (ctx) => ctx.defer(fileExists("/landing/extra.csv"), { timeout: "1h", softFail: true }));
   */
  softFail?: boolean;
}

/** How ctx.waitFor waits for a trigger: WaitOptions and the mode. */
export interface WaitForOptions extends WaitOptions {
  /**
   * How the step waits (see WaitMode); default `deferrable`.
   * @example
   * asset({ key: "partner/import" }, async (ctx) => ctx.waitFor(fileExists("/landing/{partition}.csv"), { mode: "reschedule", interval: "5m" }));
   */
  mode?: WaitMode;
}

/** Every wait ends: Airflow's sensor default. */
export const DEFAULT_WAIT_TIMEOUT_MS = 7 * 86_400_000;
const DEFAULT_INTERVAL_MS: Record<WaitMode, number> = { deferrable: 5_000, reschedule: 60_000, poke: 10_000 };
const MIN_INTERVAL_MS = 100;

export interface ResolvedWait {
  readonly mode: WaitMode;
  readonly timeoutMs: number;
  readonly intervalMs: number;
  readonly softFail: boolean;
}

/**
 * Validates the options of ctx.defer/ctx.waitFor. Throws an InputError
 * (WAIT_OPTIONS_INVALID) naming the field and `where` (the step).
 * @example resolveWait({ timeout: "2h" }, { what: "ctx.defer", assetKey: "sales/orders" }) // deferrable, checked every 5 s
 */
export function resolveWait(options: unknown, where: { what: string; assetKey: string }): ResolvedWait {
  const fail = (field: string, message: string): never => {
    throw new InputError(`${where.what}: option "${field}" ${message}`, {
      code: "WAIT_OPTIONS_INVALID",
      location: { assetKey: where.assetKey, field },
    });
  };
  if (options !== undefined && (typeof options !== "object" || options === null || Array.isArray(options))) {
    fail("options", `must be an object such as { timeout: "2h" }, not ${JSON.stringify(options)}`);
  }
  const o = (options ?? {}) as Record<string, unknown>;
  const known = new Set(["mode", "timeout", "interval", "softFail"]);
  for (const key of Object.keys(o)) if (!known.has(key)) fail(key, `is not an option; use mode, timeout, interval or softFail`);
  const mode = (o["mode"] ?? "deferrable") as WaitMode;
  if (!WAIT_MODES.includes(mode)) fail("mode", `must be one of ${WAIT_MODES.join(", ")}, not ${JSON.stringify(o["mode"])}`);
  const duration = (field: string, fallback: number): number => {
    if (o[field] === undefined) return fallback;
    try {
      return parseDuration(o[field], field);
    } catch (err) {
      return fail(field, `is not a duration (${(err as Error).message})`);
    }
  };
  const timeoutMs = duration("timeout", DEFAULT_WAIT_TIMEOUT_MS);
  if (timeoutMs <= 0) fail("timeout", "must be longer than 0");
  const intervalMs = duration("interval", DEFAULT_INTERVAL_MS[mode]);
  if (intervalMs < MIN_INTERVAL_MS) fail("interval", `must be at least ${MIN_INTERVAL_MS} ms`);
  if (o["softFail"] !== undefined && typeof o["softFail"] !== "boolean") fail("softFail", "must be true or false");
  return { mode, timeoutMs, intervalMs, softFail: o["softFail"] === true };
}
