import { cronInWords } from "./cron-in-words.js";
import { DATE_FORMAT, DATE_TIME_FORMAT } from "./key-codec.js";
import type { PartitionMappingSpec, PartitionsSpec, SingleDimensionPartitionsSpec, TimeWindowPartitionsSpec } from "./types.js";

const SHOWN_KEYS = 10;
const UNIT = { hourly: "hour", daily: "day", weekly: "week", monthly: "month", cron: "window" } as const;

/**
 * A partitions definition as a sentence, for people reading a definition rather than an error message (see
 * describePartitions for the short form): `daily partitions from 2025-01-01 in UTC, each once its day has ended`.
 *
 * @example partitionsInWords(staticPartitions(["eu", "us", "apac"])) // "3 static partitions: eu, us, apac"
 */
export function partitionsInWords(spec: PartitionsSpec | null): string {
  if (spec === null) return "not partitioned: each materialisation writes the whole asset";
  switch (spec.kind) {
    case "time":
      return timeInWords(spec);
    case "static":
      return `${spec.keys.length} static partition${spec.keys.length === 1 ? "" : "s"}: ${keyList(spec.keys)}`;
    case "dynamic":
      return `dynamic partitions of the set "${spec.name}": keys are added at run time (ctx.addDynamicPartitions)`;
    case "multi":
      return (
        `one partition per combination of ${spec.dimensions.map((d) => `${d.name} (${dimensionInWords(d.partitions)})`).join(" × ")}, ` +
        `keys read "${spec.dimensions.map((d) => d.name).join("|")}"`
      );
  }
}

/**
 * Which upstream partitions a mapping reads for one downstream partition, in words; `down` and `up` are the two
 * definitions (their cadence names the units of offsets). A null mapping is the default one, which has to be
 * resolved first (defaultMapping).
 *
 * @example mappingInWords(timeWindow({ startOffset: -6 }), daily({ start: "2025-01-01" }), daily({ start: "2025-01-01" }))
 * // "the upstream windows overlapping its own window and the 6 days before it"
 */
export function mappingInWords(mapping: PartitionMappingSpec, down: PartitionsSpec | null, up: PartitionsSpec | null): string {
  switch (mapping.kind) {
    case "identity":
      return "the upstream partition with the same key";
    case "all":
      return up === null ? "the whole upstream asset" : "every upstream partition";
    case "last":
      return "the latest upstream partition";
    case "timeWindow":
      return timeWindowInWords(mapping, timeDimension(down));
    case "static": {
      const pairs = Object.entries(mapping.map).map(([upKey, downKeys]) => `${upKey} → ${downKeys.join(", ")}`);
      const shown = pairs.slice(0, 3).join("; ");
      return `the upstream keys that feed its key (${shown}${pairs.length > 3 ? `; … ${pairs.length} keys` : ""})`;
    }
    case "multi": {
      const downDims = down?.kind === "multi" ? down.dimensions : [];
      const upDims = up?.kind === "multi" ? up.dimensions : [];
      const entries = Object.entries(mapping.dimensions).map(([downName, { upstreamDimension, mapping: inner }]) => {
        const d = downDims.find((x) => x.name === downName)?.partitions ?? (down?.kind === "multi" ? null : down);
        const u = upDims.find((x) => x.name === upstreamDimension)?.partitions ?? (up?.kind === "multi" ? null : up);
        const words = mappingInWords(inner, d, u);
        return downName === upstreamDimension ? `${downName}: ${words}` : `${downName} ← upstream ${upstreamDimension}: ${words}`;
      });
      const named = new Set(Object.values(mapping.dimensions).map((e) => e.upstreamDimension));
      const rest = upDims.filter((d) => !named.has(d.name)).map((d) => d.name);
      return `per dimension, ${entries.join("; ")}${rest.length > 0 ? `; every key of upstream ${rest.join(", ")}` : ""}`;
    }
  }
}

function timeWindowInWords(mapping: Extract<PartitionMappingSpec, { kind: "timeWindow" }>, down: TimeWindowPartitionsSpec | null): string {
  const unit = down ? UNIT[down.cadence] : "window";
  const count = (n: number) => `${n} ${unit}${n === 1 ? "" : "s"}`;
  const { startOffset: start, endOffset: end } = mapping;
  let words = "the upstream windows overlapping its own window";
  if (start < 0 && end === 0) words += ` and the ${count(-start)} before it`;
  else if (start === 0 && end > 0) words += ` and the ${count(end)} after it`;
  else if (start !== 0 || end !== 0) words += `, its start moved by ${signed(start)} and its end by ${signed(end)} ${unit}s`;
  return mapping.allowPartial === false ? `${words}; none where that reaches outside the upstream's partitions` : words;
}

function timeInWords(spec: TimeWindowPartitionsSpec): string {
  const unit = UNIT[spec.cadence];
  const what =
    spec.cadence === "cron"
      ? `partitions between the ticks of cron "${spec.cron}" (${cronInWords(spec.cron, spec.timezone)})`
      : `${spec.cadence} partitions`;
  const until = spec.end === undefined ? "" : `, until ${spec.end}`;
  const exists =
    spec.endOffset === 0
      ? `each once its ${unit} has ended`
      : spec.endOffset === 1
        ? `each from the start of its ${unit}`
        : `each from ${spec.endOffset - 1} ${unit}${spec.endOffset === 2 ? "" : "s"} before its ${unit} begins`;
  const defaultFormat = spec.cadence === "hourly" || spec.cadence === "cron" ? DATE_TIME_FORMAT : DATE_FORMAT;
  const format = spec.format === defaultFormat ? "" : `, keys formatted ${spec.format}`;
  return `${what} from ${spec.start}${until} in ${spec.timezone}, ${exists}${format}`;
}

/** A dimension of a multi definition, briefly. */
function dimensionInWords(spec: SingleDimensionPartitionsSpec): string {
  switch (spec.kind) {
    case "time":
      return spec.cadence === "cron"
        ? `cron "${spec.cron}" from ${spec.start}, ${spec.timezone}`
        : `${spec.cadence} from ${spec.start}, ${spec.timezone}`;
    case "static":
      return `static: ${keyList(spec.keys)}`;
    case "dynamic":
      return `dynamic set "${spec.name}"`;
  }
}

function timeDimension(spec: PartitionsSpec | null): TimeWindowPartitionsSpec | null {
  if (spec?.kind === "time") return spec;
  if (spec?.kind === "multi") return spec.dimensions.map((d) => d.partitions).find((p) => p.kind === "time") ?? null;
  return null;
}

function keyList(keys: readonly string[]): string {
  const shown = keys.slice(0, SHOWN_KEYS).join(", ");
  return keys.length > SHOWN_KEYS ? `${shown}, … (${keys.length} keys)` : shown;
}

const signed = (n: number): string => (n > 0 ? `+${n}` : String(n));
