import { z } from "zod";
import { deepFreeze } from "./deep-freeze.js";
import { multiMappingDimensionsSchema, parseWith, staticMapSchema, timeWindowMappingSchema } from "./spec-schema.js";
import type { PartitionMappingSpec } from "./types.js";

type MappingOf<K extends PartitionMappingSpec["kind"]> = Extract<PartitionMappingSpec, { kind: K }>;

/**
 * The downstream partition reads the upstream partition with the same key.
 * The default between equal definitions.
 */
export function identity(): MappingOf<"identity"> {
  return deepFreeze({ kind: "identity" });
}

/** The options of timeWindow(). */
export interface TimeWindowMappingOptions {
  /**
   * Downstream windows to move the start by: -6 on daily reads the last seven days. Default 0.
   * @example timeWindow({ startOffset: -6 }) // a daily partition reads its day and the six before it
   */
  startOffset?: number;
  /**
   * Downstream windows to move the end by. Default 0.
   * @example timeWindow({ startOffset: 1, endOffset: 1 }) // a daily partition reads the next day
   */
  endOffset?: number;
  /**
   * Whether a window reaching outside the upstream's definition (before its
   * start, after its end) reads the part inside it. Default true: the first
   * six partitions of `startOffset: -6` read the one to six days there are.
   * false: such a partition reads upstream partitions that can never exist,
   * so it cannot be materialised (planning reports them missing).
   * @example timeWindow({ startOffset: -6, allowPartial: false }) // the first six days have no full week to read
   */
  allowPartial?: boolean;
}

const timeWindowOptionsSchema = z.strictObject({
  startOffset: z.number().default(0),
  endOffset: z.number().default(0),
  allowPartial: z.boolean().default(true),
});

/**
 * The downstream window [start, end), each end moved by offsets counted in
 * downstream windows, reads every upstream window overlapping it: a weekly
 * partition reads its seven dailies; `startOffset: -6` on a daily one reads
 * the last seven days. Both sides must be time partitions in one timezone.
 * The part of the window outside the upstream's definition is not read (see
 * `allowPartial`); upstream windows that have not closed yet are waited for.
 *
 * @example timeWindow({ startOffset: -6 })
 */
export function timeWindow(options: TimeWindowMappingOptions = {}): MappingOf<"timeWindow"> {
  const where = "timeWindow()";
  const o = parseWith(timeWindowOptionsSchema, options, where);
  const fields = {
    kind: "timeWindow",
    startOffset: o.startOffset,
    endOffset: o.endOffset,
    ...(o.allowPartial ? {} : { allowPartial: false }),
  };
  const spec = parseWith(timeWindowMappingSchema, fields, where);
  return deepFreeze(spec);
}

/** Every existing upstream partition. The default to or from an unpartitioned asset. */
export function allPartitions(): MappingOf<"all"> {
  return deepFreeze({ kind: "all" });
}

/** The latest existing upstream partition (highest index). */
export function lastPartition(): MappingOf<"last"> {
  return deepFreeze({ kind: "last" });
}

/**
 * Upstream key → the downstream key(s) it feeds.
 *
 * @example staticMapping({ "eu-west": "eu", "eu-central": "eu", "us-east": ["us", "global"] })
 */
export function staticMapping(map: Readonly<Record<string, string | readonly string[]>>): MappingOf<"static"> {
  const where = "staticMapping()";
  const normalised =
    typeof map === "object" && map !== null
      ? Object.fromEntries(Object.entries(map).map(([up, down]) => [up, typeof down === "string" ? [down] : down]))
      : map;
  const o = parseWith(z.strictObject({ map: staticMapSchema }), { map: normalised }, where);
  return deepFreeze({ kind: "static", map: o.map });
}

/** One entry of multiMapping(): what a downstream dimension reads. */
export interface MultiMappingDimension {
  /**
   * The upstream dimension this downstream dimension reads.
   * @example multiMapping({ day: { upstreamDimension: "date", mapping: identity() } })
   */
  upstreamDimension: string;
  /**
   * How keys of the two dimensions map (identity, timeWindow, static, all, last).
   * @example multiMapping({ date: { upstreamDimension: "date", mapping: timeWindow({ startOffset: -1 }) } })
   */
  mapping: PartitionMappingSpec;
}

/**
 * Per-dimension mapping between multi-partitioned assets, keyed by downstream
 * dimension. An upstream dimension no entry names is read in full; a
 * downstream dimension no entry names does not constrain what is read. When
 * one side is single-dimensional, its only dimension is the one the entry
 * names there (by convention, the same name as on the multi side).
 *
 * @example multiMapping({ date: { upstreamDimension: "date", mapping: timeWindow({ startOffset: -1 }) } })
 */
export function multiMapping(dimensions: Readonly<Record<string, MultiMappingDimension>>): MappingOf<"multi"> {
  const o = parseWith(z.strictObject({ dimensions: multiMappingDimensionsSchema }), { dimensions }, "multiMapping()");
  return deepFreeze({ kind: "multi", dimensions: o.dimensions });
}
