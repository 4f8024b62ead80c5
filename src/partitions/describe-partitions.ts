import { DATE_FORMAT, DATE_TIME_FORMAT } from "./key-codec.js";
import type { PartitionMappingSpec, PartitionsSpec, TimeWindowPartitionsSpec } from "./types.js";

const SHOWN_KEYS = 5;

/**
 * One line naming a partitions definition the way users wrote it, for error
 * messages, the CLI and the UI: `daily(start 2025-01-01, UTC)`,
 * `static(eu, us, apac)`, `multi(date: daily(…) × region: static(…))`.
 * `null` (an unpartitioned asset) reads "unpartitioned".
 */
export function describePartitions(spec: PartitionsSpec | null): string {
  if (spec === null) return "unpartitioned";
  switch (spec.kind) {
    case "time":
      return describeTime(spec);
    case "static": {
      const shown = spec.keys.slice(0, SHOWN_KEYS).join(", ");
      return spec.keys.length > SHOWN_KEYS ? `static(${shown}, … ${spec.keys.length} keys)` : `static(${shown})`;
    }
    case "dynamic":
      return `dynamic("${spec.name}")`;
    case "multi":
      return `multi(${spec.dimensions.map((d) => `${d.name}: ${describePartitions(d.partitions)}`).join(" × ")})`;
  }
}

function describeTime(spec: TimeWindowPartitionsSpec): string {
  const parts: string[] = [];
  if (spec.cadence === "cron") parts.push(`"${spec.cron}"`);
  parts.push(`start ${spec.start}`);
  if (spec.end !== undefined) parts.push(`end ${spec.end}`);
  parts.push(spec.timezone);
  if (spec.endOffset !== 0) parts.push(`endOffset ${spec.endOffset}`);
  const defaultFormat =
    spec.cadence === "daily" || spec.cadence === "weekly" || spec.cadence === "monthly" ? DATE_FORMAT : DATE_TIME_FORMAT;
  if (spec.format !== defaultFormat) parts.push(`format ${spec.format}`);
  const name = spec.cadence === "cron" ? "timeWindows" : spec.cadence;
  return `${name}(${parts.join(", ")})`;
}

/** One line naming a mapping: `timeWindow(startOffset -6)`, `static(3 keys)`, `multi(date ← date: identity())`. */
export function describeMapping(mapping: PartitionMappingSpec | null): string {
  if (mapping === null) return "the default mapping";
  switch (mapping.kind) {
    case "identity":
      return "identity()";
    case "all":
      return "allPartitions()";
    case "last":
      return "lastPartition()";
    case "timeWindow": {
      const parts: string[] = [];
      if (mapping.startOffset !== 0) parts.push(`startOffset ${mapping.startOffset}`);
      if (mapping.endOffset !== 0) parts.push(`endOffset ${mapping.endOffset}`);
      if (mapping.allowPartial === false) parts.push("allowPartial false");
      return `timeWindow(${parts.join(", ")})`;
    }
    case "static":
      return `staticMapping(${Object.keys(mapping.map).length} keys)`;
    case "multi":
      return `multiMapping(${Object.entries(mapping.dimensions)
        .map(([down, { upstreamDimension, mapping: inner }]) => `${down} ← ${upstreamDimension}: ${describeMapping(inner)}`)
        .join(", ")})`;
  }
}
