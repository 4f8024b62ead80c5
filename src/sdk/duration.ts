import { DefinitionError } from "../errors/index.js";

/** `"90s"`, `"5m"`, `"1h"`, `"2d"`, `"250ms"`, or a number of milliseconds. */
export type Duration = number | `${number}${DurationUnit}`;
type DurationUnit = "ms" | "s" | "m" | "h" | "d";

const UNIT_MS: Record<DurationUnit, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION_RE = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;

/**
 * Parses a duration to milliseconds; `field` names the config field in the error.
 * @example parseDuration("90s", "timeout") // 90000
 */
export function parseDuration(value: unknown, field: string): number {
  if (typeof value === "number") {
    if (Number.isFinite(value) && value >= 0) return Math.round(value);
  } else if (typeof value === "string") {
    const m = DURATION_RE.exec(value.trim());
    if (m) return Math.round(Number(m[1]) * UNIT_MS[m[2] as DurationUnit]);
  }
  throw new DefinitionError(
    `field "${field}": ${JSON.stringify(value)} is not a duration; write "90s", "5m", "1h", "2d" or a number of milliseconds`,
    { location: { field } },
  );
}
