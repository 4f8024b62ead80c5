import { describeMapping, describePartitions } from "./describe-partitions.js";
import { specsEqual } from "./specs-equal.js";
import type { PartitionMappingSpec, PartitionsSpec, SingleDimensionPartitionsSpec, TimeWindowPartitionsSpec } from "./types.js";

/** A mapping between two single dimensions. */
export type AxisMapping = Exclude<PartitionMappingSpec, { kind: "multi" }>;

/** `down` reads `up` through `mapping`; null names the sole dimension of a single-dimension side. */
export interface AxisLink {
  readonly down: string | null;
  readonly up: string | null;
  readonly mapping: AxisMapping;
}

/**
 * How a mapping is computed between two partitioned definitions:
 * - whole: on whole keys/indices (all, last, static, identity of equal definitions);
 * - axes: per dimension. Upstream dimensions no link names are read in full;
 *   downstream dimensions no link names do not constrain what is read.
 */
export type MappingPlan =
  | { readonly kind: "whole"; readonly mapping: Extract<AxisMapping, { kind: "identity" | "all" | "last" | "static" }> }
  | { readonly kind: "axes"; readonly links: readonly AxisLink[] };

export interface Names {
  readonly downstream: string;
  readonly upstream: string;
}

export const DEFAULT_NAMES: Names = { downstream: "downstream", upstream: "upstream" };

interface Dimension {
  readonly name: string | null;
  readonly spec: SingleDimensionPartitionsSpec;
}

export function dimensionsOf(spec: PartitionsSpec): readonly Dimension[] {
  return spec.kind === "multi" ? spec.dimensions.map((d) => ({ name: d.name, spec: d.partitions })) : [{ name: null, spec }];
}

/** Same windows and key format (start, end and endOffset may differ): keys mean the same thing. */
export function sameTimeGrid(a: TimeWindowPartitionsSpec, b: TimeWindowPartitionsSpec): boolean {
  return a.cadence === b.cadence && a.cron === b.cron && a.timezone === b.timezone && a.format === b.format;
}

/** Whether identity makes sense from `down` to `up`: every downstream key can name an upstream one. */
export function identityCompatible(down: SingleDimensionPartitionsSpec, up: SingleDimensionPartitionsSpec): boolean {
  if (specsEqual(down, up)) return true;
  if (down.kind === "time" && up.kind === "time") return sameTimeGrid(down, up);
  if (down.kind === "static" && up.kind === "static") return down.keys.every((k) => up.keys.includes(k));
  return false;
}

/**
 * Resolves `mapping` between two partitioned definitions into a plan, or
 * explains why it cannot be computed at all.
 */
export function planMapping(
  down: PartitionsSpec,
  up: PartitionsSpec,
  mapping: PartitionMappingSpec,
  names: Names = DEFAULT_NAMES,
): { plan: MappingPlan; problems: readonly string[] } | { plan: null; problems: readonly string[] } {
  const fail = (problem: string) => ({ plan: null, problems: [problem] }) as const;
  const ok = (plan: MappingPlan) => ({ plan, problems: [] as string[] });
  const downDims = dimensionsOf(down);
  const upDims = dimensionsOf(up);
  const which = `${names.downstream} is ${describePartitions(down)}, ${names.upstream} is ${describePartitions(up)}`;

  switch (mapping.kind) {
    case "all":
    case "last":
    case "static":
      return ok({ kind: "whole", mapping });
    case "identity": {
      if (specsEqual(down, up)) return ok({ kind: "whole", mapping });
      if (down.kind !== "multi" && up.kind !== "multi") return ok({ kind: "axes", links: [{ down: null, up: null, mapping }] });
      if (down.kind !== "multi" || up.kind !== "multi") {
        const single = down.kind === "multi" ? up : down;
        const multiDims = down.kind === "multi" ? downDims : upDims;
        const matches = multiDims.filter((d) =>
          down.kind === "multi"
            ? identityCompatible(d.spec, single as SingleDimensionPartitionsSpec)
            : identityCompatible(single as SingleDimensionPartitionsSpec, d.spec),
        );
        if (matches.length !== 1) {
          return fail(
            `identity() between a single- and a multi-dimension definition needs exactly one matching dimension, found ${matches.length} (${which}); use multiMapping()`,
          );
        }
        const name = matches[0]!.name;
        return ok({ kind: "axes", links: [down.kind === "multi" ? { down: name, up: null, mapping } : { down: null, up: name, mapping }] });
      }
      const downNames = downDims
        .map((d) => d.name)
        .sort()
        .join("|");
      const upNames = upDims
        .map((d) => d.name)
        .sort()
        .join("|");
      if (downNames !== upNames) {
        return fail(`identity() between multi definitions with different dimensions (${which}); use multiMapping()`);
      }
      return ok({ kind: "axes", links: downDims.map((d) => ({ down: d.name, up: d.name, mapping })) });
    }
    case "timeWindow": {
      const downTime = downDims.find((d) => d.spec.kind === "time");
      const upTime = upDims.find((d) => d.spec.kind === "time");
      if (!downTime || !upTime) {
        return fail(`${describeMapping(mapping)} needs time partitions on both sides (${which})`);
      }
      const links: AxisLink[] = [{ down: downTime.name, up: upTime.name, mapping }];
      if (down.kind === "multi" && up.kind === "multi") {
        // The other dimensions pair up by name.
        for (const d of downDims) {
          if (d === downTime) continue;
          const u = upDims.find((x) => x.name === d.name && x !== upTime);
          if (u) links.push({ down: d.name, up: u.name, mapping: { kind: "identity" } });
        }
      }
      return ok({ kind: "axes", links });
    }
    case "multi": {
      const entries = Object.entries(mapping.dimensions);
      if (down.kind !== "multi" && entries.length !== 1) {
        return fail(
          `${names.downstream} has a single dimension (${describePartitions(down)}): multiMapping() needs exactly one entry, got ${entries.length}`,
        );
      }
      if (up.kind !== "multi" && entries.length !== 1) {
        return fail(
          `${names.upstream} has a single dimension (${describePartitions(up)}): multiMapping() needs exactly one entry, got ${entries.length}`,
        );
      }
      const links: AxisLink[] = [];
      for (const [downName, entry] of entries) {
        const downDim = down.kind === "multi" ? downDims.find((d) => d.name === downName) : downDims[0];
        const upDim = up.kind === "multi" ? upDims.find((d) => d.name === entry.upstreamDimension) : upDims[0];
        if (!downDim)
          return fail(`multiMapping() names downstream dimension "${downName}", but ${names.downstream} has ${dimensionList(down)}`);
        if (!upDim)
          return fail(
            `multiMapping() names upstream dimension "${entry.upstreamDimension}", but ${names.upstream} has ${dimensionList(up)}`,
          );
        const inner = entry.mapping as PartitionMappingSpec;
        if (inner.kind === "multi") return fail(`multiMapping() entry "${downName}" nests another multiMapping()`);
        if (inner.kind === "timeWindow" && (downDim.spec.kind !== "time" || upDim.spec.kind !== "time")) {
          return fail(
            `multiMapping() entry "${downName}": ${describeMapping(inner)} needs time partitions on both sides (${describePartitions(downDim.spec)} ← ${describePartitions(upDim.spec)})`,
          );
        }
        links.push({ down: downDim.name, up: upDim.name, mapping: inner });
      }
      return ok({ kind: "axes", links });
    }
  }
}

function dimensionList(spec: PartitionsSpec): string {
  return spec.kind === "multi" ? `dimensions ${spec.dimensions.map((d) => `"${d.name}"`).join(", ")}` : "a single dimension";
}
