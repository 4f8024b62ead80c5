import { InputError } from "../errors/index.js";

/** A positive whole-number flag, or undefined when not given. */
export function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InputError(`${flag}: "${value}" is not a positive whole number`);
  return n;
}
