import { InputError } from "../errors/index.js";
import { parseDuration } from "../sdk/index.js";

/** A positive whole-number flag, or undefined when not given. */
export function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InputError(`${flag}: "${value}" is not a positive whole number`);
  return n;
}

/** A duration flag (`90s`, `5m`, or milliseconds), or undefined when not given. */
export function durationMs(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  try {
    const ms = parseDuration(/^\d+$/.test(value) ? Number(value) : value, flag);
    if (ms > 0) return ms;
  } catch {
    // fall through to the flag's own message
  }
  throw new InputError(`${flag}: "${value}" is not a positive duration; write e.g. 30s, 5m or 5000`);
}

/** A whole-number flag from 0 (an index). */
export function wholeNumber(value: string, flag: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isInteger(n) || n < 0) throw new InputError(`${flag}: "${value}" is not a whole number (0, 1, 2, …)`);
  return n;
}
