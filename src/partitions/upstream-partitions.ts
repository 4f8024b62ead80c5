import { requestUpstream, type AxisRequest } from "./axis-mapping.js";
import { axesOf, axisIndex } from "./axes-of.js";
import { MultiPartitionSpace } from "./multi-partition-space.js";
import type { MappingPlan } from "./mapping-plan.js";
import { spaceOf, type AnyPartitionSpace, type PartitionContext } from "./partition-space.js";
import { PartitionSubset, UNPARTITIONED } from "./partition-subset.js";
import { resolvePlan, unpartitionedDownstreamMapping } from "./resolve-plan.js";
import { DIMENSION_SEPARATOR } from "./spec-schema.js";
import { boxesOf, linearize } from "./subset-boxes.js";
import { TimePartitionSpace } from "./time-partition-space.js";
import type { PartitionMappingSpec, PartitionsSpec } from "./types.js";

const SAMPLE_SIZE = 10;

/** Upstream partitions a mapping would read that do not exist: reported, never silently dropped. */
export interface MissingPartitions {
  /** How many. An upstream with no partitions at all, read by lastPartition(), counts as one. */
  readonly count: number;
  /** Up to 10 of their keys, in index order. For a multi upstream, `*` stands for every key of a dimension. */
  readonly sample: readonly string[];
  /** Why, by kind: `6 before the first partition "2025-01-01"`, `1 not existing yet at 2025-03-01T00:00:00.000Z`. */
  readonly reasons: readonly string[];
}

export interface UpstreamPartitions {
  /** The existing upstream partitions read. */
  readonly subset: PartitionSubset;
  /** Those that would be read but do not exist at `now`. */
  readonly missing: MissingPartitions;
}

const NONE_MISSING: MissingPartitions = Object.freeze({ count: 0, sample: [], reasons: [] });

/**
 * The upstream partitions that `downSubset` of the downstream asset reads.
 * A `null` spec is an unpartitioned asset (its subset is {@link UNPARTITIONED});
 * a `null` mapping is the default one (see defaultMapping). Upstream
 * partitions that would be read but do not exist at `now` (window not closed,
 * before the upstream start, after its end, unknown static/dynamic key) are
 * listed in `missing`. DefinitionError when the mapping cannot apply.
 *
 * @example
 * const days = daily({ start: "2025-01-01" });
 * const { subset, missing } = upstreamPartitions(days, days, timeWindow({ startOffset: -6 }),
 *   partitionSpace(days).range("2025-01-10", "2025-01-10"), undefined, new Date("2025-02-01"));
 * // subset: 2025-01-04 … 2025-01-10 (indices 3-10); missing.count: 0
 */
export function upstreamPartitions(
  downSpec: PartitionsSpec | null,
  upSpec: PartitionsSpec | null,
  mapping: PartitionMappingSpec | null,
  downSubset: PartitionSubset,
  ctx: PartitionContext | undefined,
  now: Date,
): UpstreamPartitions {
  if (downSubset.isEmpty()) return { subset: PartitionSubset.EMPTY, missing: NONE_MISSING };
  if (upSpec === null) return { subset: UNPARTITIONED, missing: NONE_MISSING };
  const up = spaceOf(upSpec, ctx);
  let request: Request;
  if (downSpec === null) {
    const kind = unpartitionedDownstreamMapping(mapping, upSpec);
    // all/last never consult the downstream side.
    request = fromAxisRequest(requestUpstream(up, up, { kind }, downSubset, now));
  } else {
    request = requestByPlan(spaceOf(downSpec, ctx), up, resolvePlan(downSpec, upSpec, mapping), downSubset, now);
  }
  const existing = up.all(now);
  return {
    subset: request.indices.intersection(existing),
    missing: describeMissing(up, request, request.indices.difference(existing), now),
  };
}

interface Request {
  readonly indices: PartitionSubset;
  readonly unknownCount: number;
  readonly unknownSample: readonly string[];
  readonly notes: readonly string[];
}

function fromAxisRequest(r: AxisRequest): Request {
  return {
    indices: r.indices,
    unknownCount: r.unknownKeys.length,
    unknownSample: r.unknownKeys.slice(0, SAMPLE_SIZE),
    notes: r.noneToRead === undefined ? [] : [r.noneToRead],
  };
}

function requestByPlan(down: AnyPartitionSpace, up: AnyPartitionSpace, plan: MappingPlan, subset: PartitionSubset, now: Date): Request {
  if (plan.kind === "whole") return fromAxisRequest(requestUpstream(down, up, plan.mapping, subset, now));
  const downAxes = axesOf(down);
  const upAxes = axesOf(up);
  const upSizes = upAxes.map((a) => a.space.size);
  const links = plan.links.map((l) => ({ d: axisIndex(downAxes, l.down), u: axisIndex(upAxes, l.up), mapping: l.mapping }));
  const boxes =
    downAxes.length === 1
      ? [[subset]]
      : boxesOf(
          subset,
          downAxes.map((a) => a.space.size),
        );
  const ranges: [number, number][] = [];
  let unknownCount = 0;
  const unknownSample: string[] = [];
  const notes = new Set<string>();
  for (const box of boxes) {
    const upBox = upAxes.map((a) => a.space.all(now));
    const linked = new Set<number>();
    const unknown = new Map<number, string[]>();
    for (const { d, u, mapping } of links) {
      const r = requestUpstream(downAxes[d]!.space, upAxes[u]!.space, mapping, box[d]!, now);
      upBox[u] = linked.has(u) ? upBox[u]!.intersection(r.indices) : r.indices;
      linked.add(u);
      if (r.unknownKeys.length > 0) unknown.set(u, [...(unknown.get(u) ?? []), ...r.unknownKeys]);
      if (r.noneToRead !== undefined) notes.add(r.noneToRead);
    }
    for (const [u, keys] of unknown) {
      const others = upBox.reduce((n, s, k) => (k === u ? n : n * s.count()), 1);
      unknownCount += keys.length * others;
      for (const key of keys) {
        if (unknownSample.length < SAMPLE_SIZE) unknownSample.push(withWildcards(up, upAxes[u]!.position, key));
      }
    }
    for (const range of linearize(upBox, upSizes)) ranges.push(range);
  }
  return { indices: PartitionSubset.fromRanges(ranges), unknownCount, unknownSample, notes: [...notes] };
}

/** `*|customer-9`: a key of one dimension of a multi upstream, the others left open. */
function withWildcards(space: AnyPartitionSpace, position: number, key: string): string {
  if (!(space instanceof MultiPartitionSpace)) return key;
  return space.spec.dimensions.map((_, i) => (i === position ? key : "*")).join(DIMENSION_SEPARATOR);
}

function describeMissing(up: AnyPartitionSpace, request: Request, missing: PartitionSubset, now: Date): MissingPartitions {
  const count = missing.count() + request.unknownCount + request.notes.length;
  if (count === 0) return NONE_MISSING;
  const reasons: string[] = [];
  const lead = axesOf(up)[0]!.space;
  if (!missing.isEmpty()) {
    const size = Number.isFinite(up.size) ? up.size : Number.MAX_SAFE_INTEGER;
    const before = missing.clamp(Number.MIN_SAFE_INTEGER, 0).count();
    const notYet = missing.clamp(0, size).count();
    const after = missing.clamp(size, Number.MAX_SAFE_INTEGER).count();
    const lastKey = () => lead.keyOfExtended(lead.size - 1);
    // Outside the definition: no run will ever make them, unlike windows that have not closed yet.
    if (before > 0)
      reasons.push(`${before} before the first partition "${lead.keyOfExtended(0)}" of ${up.describe()} (outside it: they never exist)`);
    if (notYet > 0) {
      const why = lead instanceof TimePartitionSpace ? " (their windows have not closed)" : "";
      reasons.push(`${notYet} not existing yet at ${now.toISOString()}${why}`);
    }
    if (after > 0) reasons.push(`${after} after the last partition "${lastKey()}" of ${up.describe()} (outside it: they never exist)`);
  }
  if (request.unknownCount > 0) {
    const dynamic =
      up.spec.kind === "dynamic" || (up.spec.kind === "multi" && up.spec.dimensions.some((d) => d.partitions.kind === "dynamic"));
    reasons.push(`${request.unknownCount} with keys ${up.describe()} does not have${dynamic ? " (dynamic keys not added yet?)" : ""}`);
  }
  reasons.push(...request.notes);
  const sample: string[] = [];
  for (const index of missing) {
    if (sample.length >= SAMPLE_SIZE) break;
    sample.push(up.keyOfExtended(index));
  }
  for (const key of request.unknownSample) if (sample.length < SAMPLE_SIZE) sample.push(key);
  return { count, sample, reasons };
}
