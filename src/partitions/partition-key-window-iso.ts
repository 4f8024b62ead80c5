import { DateTime } from "luxon";
import { PartitionError } from "../errors/index.js";
import { describePartitions } from "./describe-partitions.js";
import { spaceOf } from "./partition-space.js";
import { DIMENSION_SEPARATOR } from "./spec-schema.js";
import type { PartitionsSpec } from "./types.js";

/**
 * The window of a time partition key as ISO 8601 strings in the definition's
 * timezone (`2025-03-15T00:00:00+01:00`), for `{start}`/`{end}` templates and
 * display. For a multi key only its time dimension is read (other dimensions
 * may be dynamic and are not checked). Undefined for definitions without
 * time; PartitionError when the key is not a partition.
 *
 * @example partitionKeyWindowIso(daily({ start: "2025-01-01" }), "2025-03-15")
 * // { start: "2025-03-15T00:00:00Z", end: "2025-03-16T00:00:00Z" }
 */
export function partitionKeyWindowIso(spec: PartitionsSpec, key: string): { start: string; end: string } | undefined {
  let timeSpec = spec;
  let timeKey = key;
  if (spec.kind === "multi") {
    const position = spec.dimensions.findIndex((d) => d.partitions.kind === "time");
    if (position < 0) return undefined;
    const parts = key.split(DIMENSION_SEPARATOR);
    if (parts.length !== spec.dimensions.length) {
      const shape = spec.dimensions.map((d) => d.name).join(DIMENSION_SEPARATOR);
      throw new PartitionError(
        `"${key}" is not a partition of ${describePartitions(spec)}: expected ${spec.dimensions.length} keys separated by "|" (${shape})`,
        {
          code: "PARTITION_KEY_INVALID",
          location: { partitionKey: key },
        },
      );
    }
    timeSpec = spec.dimensions[position]!.partitions;
    timeKey = parts[position]!;
  }
  if (timeSpec.kind !== "time") return undefined;
  const window = spaceOf(timeSpec).window(timeKey)!;
  const iso = (d: Date): string =>
    DateTime.fromJSDate(d, { zone: timeSpec.timezone }).toISO({ suppressMilliseconds: true, includeOffset: true })!;
  return { start: iso(window.start), end: iso(window.end) };
}
