import { PartitionError } from "../errors/index.js";
import { describePartitions } from "./describe-partitions.js";
import { KeyListPartitionSpace } from "./key-list-partition-space.js";
import { MultiPartitionSpace, type SingleDimensionSpace } from "./multi-partition-space.js";
import type { PartitionSubset } from "./partition-subset.js";
import { parsePartitionsSpec } from "./spec-schema.js";
import { TimePartitionSpace } from "./time-partition-space.js";
import type { PartitionsSpec, TimeWindow } from "./types.js";

/** What a partition space needs from outside: the keys of dynamic partition sets. */
export interface PartitionContext {
  /** Keys of the dynamic set `name`, in insertion order (from the database). */
  dynamicKeys(name: string): readonly string[];
}

/**
 * The runtime view of a partitions definition: keys ↔ indices, windows, and
 * the partitions that exist at an instant. Every partition has an index, its
 * position in the definition's order:
 *
 * - time: windows since `start` (window 0 is the first starting at or after it);
 * - static: list order; dynamic: insertion order (as given by the context);
 * - multi: mixed-radix linearisation of the dimensions' indices, the time
 *   dimension (if any) most significant, then the other dimensions in
 *   declaration order. The time dimension leads because it is the only one
 *   that grows with time: the partitions existing at `now` are then always one
 *   range, `[0, count(now))`, and a date range is one range across all other
 *   dimensions. Keys still list dimensions in declaration order (`eu|2025-03-15`
 *   for `{ region, date }`).
 *
 * Indices of a space with dynamic keys are valid for that space's snapshot of
 * the keys: persist keys, not indices, across key-set changes.
 *
 * Key and index lookups are O(1) or O(log n) for every definition; subsets are
 * ranges (see {@link PartitionSubset}).
 */
export interface PartitionSpace {
  readonly spec: PartitionsSpec;
  /**
   * How many partitions the definition can ever have: Infinity for a time
   * definition without `end`. Existing ones at an instant: {@link count}.
   */
  readonly size: number;
  /** `daily(start 2025-01-01, UTC)`: see describePartitions. */
  describe(): string;
  /**
   * Partitions existing at `now`. A time partition exists once its window has
   * closed (end <= now), plus `endOffset` windows further (1: the open one too),
   * never beyond `end`. Static and dynamic partitions always exist.
   */
  count(now: Date): number;
  /** The existing partitions at `now`: always the range [0, count(now)). */
  all(now: Date): PartitionSubset;
  /** Key of the partition at `index` (0 <= index < size), existing yet or not. PartitionError otherwise. */
  keyAt(index: number): string;
  /**
   * Index of `key`; throws PartitionError code PARTITION_KEY_INVALID naming the
   * key, the definition and what was expected.
   */
  indexOf(key: string): number;
  /** Whether `key` is a partition of the definition (existing yet or not). */
  has(key: string): boolean;
  /** The time window of a time (or multi with a time dimension) partition; undefined otherwise. */
  window(key: string): TimeWindow | undefined;
  /** {@link window} by index. */
  windowAt(index: number): TimeWindow | undefined;
  /**
   * Partitions from `fromKey` to `toKey`, both included. On a multi definition
   * with a time dimension, two keys of that dimension alone (`2025-01-01`)
   * select those dates across all other dimensions. PartitionError code
   * PARTITION_RANGE_INVALID when `toKey` comes before `fromKey`.
   */
  range(fromKey: string, toKey: string): PartitionSubset;
  /** The subset holding these keys (each validated as by {@link indexOf}). */
  subset(keys: Iterable<string>): PartitionSubset;
  /** Keys of a subset's partitions, in index order. */
  keys(subset: PartitionSubset): IterableIterator<string>;
  /** `{ date: "2025-03-15", region: "eu" }` for a multi key; undefined for other definitions. */
  dimensions(key: string): Readonly<Record<string, string>> | undefined;
}

/** A concrete space: what mapping code works with. */
export type AnyPartitionSpace = TimePartitionSpace | KeyListPartitionSpace | MultiPartitionSpace;

const cache = new WeakMap<PartitionsSpec, AnyPartitionSpace>();
const validated = new WeakSet<PartitionsSpec>();

/**
 * The runtime view of a partitions definition. `ctx` supplies the keys of
 * dynamic partition sets and is required only when the spec has one. Specs
 * without dynamic keys get one cached space per spec object.
 *
 * @example
 * const space = partitionSpace(daily({ start: "2025-01-01" }));
 * space.count(new Date("2025-01-11T00:00:00Z")); // 10
 * space.keyAt(0); // "2025-01-01"
 */
export function partitionSpace(spec: PartitionsSpec, ctx?: PartitionContext): PartitionSpace {
  return spaceOf(spec, ctx);
}

/**
 * {@link partitionSpace} with dynamic keys fetched first, for callers whose
 * key source is asynchronous (the database).
 */
export async function loadPartitionSpace(
  spec: PartitionsSpec,
  dynamicKeys: (name: string) => Promise<readonly string[]> | readonly string[],
): Promise<PartitionSpace> {
  if (dynamicNames(spec).length === 0) return spaceOf(spec);
  return spaceOf(spec, await loadPartitionContext([spec], dynamicKeys));
}

/**
 * A context holding the keys of every dynamic partition set the specs use,
 * fetched once (one call per set) from an asynchronous source.
 */
export async function loadPartitionContext(
  specs: Iterable<PartitionsSpec | null>,
  dynamicKeys: (name: string) => Promise<readonly string[]> | readonly string[],
): Promise<PartitionContext> {
  const names = new Set<string>();
  for (const spec of specs) if (spec) for (const n of dynamicNames(spec)) names.add(n);
  const entries = await Promise.all([...names].map(async (name) => [name, await dynamicKeys(name)] as const));
  const keys = new Map(entries);
  return { dynamicKeys: (name) => keys.get(name) ?? [] };
}

/** Names of the dynamic partition sets a spec uses. */
export function dynamicNames(spec: PartitionsSpec): string[] {
  if (spec.kind === "dynamic") return [spec.name];
  if (spec.kind === "multi") return spec.dimensions.flatMap((d) => (d.partitions.kind === "dynamic" ? [d.partitions.name] : []));
  return [];
}

/** @internal the concrete space of a spec. */
export function spaceOf(spec: PartitionsSpec, ctx?: PartitionContext): AnyPartitionSpace {
  const cached = cache.get(spec);
  if (cached) return cached;
  if (!validated.has(spec)) {
    parsePartitionsSpec(spec);
    validated.add(spec);
  }
  const space = build(spec, ctx);
  if (dynamicNames(spec).length === 0) cache.set(spec, space);
  return space;
}

function build(spec: PartitionsSpec, ctx: PartitionContext | undefined): AnyPartitionSpace {
  switch (spec.kind) {
    case "multi":
      return new MultiPartitionSpace(
        spec,
        spec.dimensions.map((d) => build(d.partitions, ctx) as SingleDimensionSpace),
      );
    case "time":
      return new TimePartitionSpace(spec);
    case "static":
      return new KeyListPartitionSpace(spec, spec.keys);
    case "dynamic": {
      if (!ctx) {
        throw new PartitionError(`${describePartitions(spec)} needs its keys: pass a context with dynamicKeys(name) to partitionSpace()`, {
          code: "PARTITION_CONTEXT_MISSING",
        });
      }
      return new KeyListPartitionSpace(spec, ctx.dynamicKeys(spec.name));
    }
  }
}
