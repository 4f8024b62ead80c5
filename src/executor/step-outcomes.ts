import { serializeError } from "../errors/index.js";
import type { StepDispatch, StepOutcome } from "../execution/index.js";
import { DEFAULT_MAX_MAP_ITEMS, findNonJson, MAX_MAP_LABEL_LENGTH, type Expansion } from "../sdk/index.js";
import { describeTry, STEP_ERROR_CODES, stepError } from "./step-errors.js";
import type { ActiveTry } from "./step-runtime.js";

// What a try's return value becomes: an output stored as JSON within the size limit, or a fan-out's checked items.

/** A failure of the step's own code (or of what it returned): the user's, counted against the asset's retries. */
/**
 * What an in-process lane ends a try with when the scheduler gave up on it (it ignored its signal past the grace
 * period): the scheduler has reported the failure itself; this only ends the try's log and frees its slot.
 */
export const ABANDONED: StepOutcome = Object.freeze({
  kind: "failed",
  error: { name: "TributaryError", code: "ABANDONED", message: "abandoned" },
  retryable: true,
  failureClass: "user",
});

export function failed(err: unknown, retryable: boolean): StepOutcome {
  return { kind: "failed", error: serializeError(err), retryable, failureClass: "user" };
}

export function serializeOutput(d: StepDispatch, value: unknown): StepOutcome {
  if (value === undefined) return { kind: "success", outputJson: "null", sizeBytes: 4 };
  const bad = findNonJson(value, "output");
  if (bad) {
    return failed(
      stepError(
        STEP_ERROR_CODES.notSerializable,
        d,
        `${describeTry(d)}: the return value cannot be stored as JSON: value at ${bad}. ` +
          `Return plain data: objects, arrays, strings, finite numbers, booleans and null ` +
          `(e.g. a Date as date.toISOString(), a BigInt as String(n), null instead of undefined)`,
      ),
      true,
    );
  }
  const outputJson = JSON.stringify(value);
  const sizeBytes = Buffer.byteLength(outputJson);
  const max = maxOutputBytes();
  if (sizeBytes > max) {
    return failed(
      stepError(
        STEP_ERROR_CODES.outputOverMaximum,
        d,
        `${describeTry(d)}: the output is ${formatSize(sizeBytes)}, over the maximum of ${formatSize(max)} (${MAX_OUTPUT_BYTES_ENV}); ` +
          `write the data where it belongs (a table, a file, object storage) and return a reference to it (its name, path or key)`,
      ),
      false,
    );
  }
  return { kind: "success", outputJson, sizeBytes };
}

/** The largest output a step may return, in bytes: TRIBUTARY_MAX_OUTPUT_BYTES, default 64 MiB. */
export const MAX_OUTPUT_BYTES_ENV = "TRIBUTARY_MAX_OUTPUT_BYTES";
const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024 * 1024;

function maxOutputBytes(): number {
  const raw = process.env[MAX_OUTPUT_BYTES_ENV];
  const n = raw === undefined || raw === "" ? NaN : Number(raw);
  return Number.isSafeInteger(n) && n > 0 ? n : DEFAULT_MAX_OUTPUT_BYTES;
}

function formatSize(n: number): string {
  return n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KB` : `${n} bytes`;
}

/**
 * A fan-out's items, checked: an array, within the asset's maxMapItems, every item JSON; each label a string.
 * What is wrong fails the try for good (the same code answers the same way on every try), naming the item.
 */
export function expansionOutcome(active: ActiveTry, expansion: Expansion): StepOutcome {
  const d = active.dispatch;
  const spec = active.definition?.spec;
  const source = active.definition?.fanOut.map ? "map" : "ctx.expand(items)";
  const fail = (code: string, message: string): StepOutcome => failed(stepError(code, d, `${describeTry(d)}: ${message}`), false);
  if (d.map !== undefined) {
    return fail(
      "MAP_NESTED",
      `a mapped step (item ${d.map.index}) cannot fan out again: return the item's result, and fan out in a downstream asset`,
    );
  }
  const items = expansion.items;
  if (!Array.isArray(items)) {
    return fail("MAP_RESULT_INVALID", `${source} must answer an array of items, but answered ${describeValue(items)}`);
  }
  const max = spec?.fanOut?.maxItems ?? DEFAULT_MAX_MAP_ITEMS;
  if (items.length > max) {
    return fail(
      "MAP_TOO_MANY_ITEMS",
      `${source} answered ${items.length} items, over the limit of ${max} per fan-out; ` +
        `raise the asset's maxMapItems (at most 100 000) or group the items into fewer, larger ones`,
    );
  }
  for (let i = 0; i < items.length; i++) {
    const bad = findNonJson(items[i], `items[${i}]`);
    if (bad) {
      return fail(
        "MAP_ITEM_NOT_SERIALIZABLE",
        `${source} answered an item that cannot be stored as JSON: value at ${bad}. ` +
          `Items are handed to their steps as JSON: use plain data (e.g. a path or an id, a Date as toISOString())`,
      );
    }
  }
  let labels: (string | null)[] | null = null;
  if (expansion.label) {
    labels = [];
    for (let i = 0; i < items.length; i++) {
      let label: unknown;
      try {
        label = (expansion.label as (item: unknown, index: number) => unknown)(items[i], i);
      } catch (err) {
        return fail("MAP_LABEL_INVALID", `the label function threw on item ${i}: ${err instanceof Error ? err.message : String(err)}`);
      }
      if (typeof label !== "string")
        return fail("MAP_LABEL_INVALID", `the label function must return a string, but returned ${describeValue(label)} for item ${i}`);
      labels.push(label.length > MAX_MAP_LABEL_LENGTH ? `${label.slice(0, MAX_MAP_LABEL_LENGTH - 1)}…` : label);
    }
  }
  return { kind: "expanded", count: items.length, itemsJson: JSON.stringify(items), labels };
}

function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? `an object (${(value as object).constructor?.name ?? "Object"})` : `a ${typeof value}`;
}
