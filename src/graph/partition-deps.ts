import {
  defaultMapping,
  describeMapping,
  describePartitions,
  validateMapping,
  type PartitionMappingSpec,
  type PartitionsSpec,
} from "../partitions/index.js";
import type { DepSpec } from "../sdk/index.js";
import type { GraphProblemCode } from "./graph-problem.js";
import type { SnapshotAsset } from "./snapshot.js";

/**
 * Whether `down` can read `up` through the dependency's partition mapping.
 * A stated mapping must fit both partitions definitions. A dependency without
 * one gets the default mapping, which must fit too and must give one upstream
 * partition per downstream partition: the SDK types such a dependency as a
 * single value, so reading many needs the mapping written out.
 */
export function checkDependencyMapping(
  down: SnapshotAsset,
  dep: DepSpec,
  up: SnapshotAsset,
): { code: GraphProblemCode; message: string } | undefined {
  const downSpec = down.partitions;
  const upSpec = up.partitions;
  const names = { downstream: `"${down.key}"`, upstream: `"${up.key}"` };
  if (dep.mapping !== null) {
    const problems = validateMapping(downSpec, upSpec, dep.mapping, names);
    if (problems.length === 0) return undefined;
    return {
      code: "GRAPH_INCOMPATIBLE_MAPPING",
      message:
        `reads "${up.key}" (${up.file}) through ${describeMapping(dep.mapping)}, which does not fit: ${problems.join("; ")}` +
        ` (downstream: ${describePartitions(downSpec)}; upstream: ${describePartitions(upSpec)})`,
    };
  }
  const fallback = defaultMapping(downSpec, upSpec);
  if (fallback.mapping === null) {
    return {
      code: "GRAPH_INCOMPATIBLE_MAPPING",
      message:
        `reads "${up.key}" (${up.file}) without a partition mapping, and there is no default between ` +
        `${describePartitions(downSpec)} and ${describePartitions(upSpec)}: ${fallback.reason}; ` +
        `state one, e.g. ${dep.name}: dep(${dep.name}, ${suggestedMapping(downSpec, upSpec)})`,
    };
  }
  const problems = validateMapping(downSpec, upSpec, fallback.mapping, names);
  if (problems.length > 0) {
    return {
      code: "GRAPH_INCOMPATIBLE_MAPPING",
      message:
        `reads "${up.key}" (${up.file}) through the default mapping ${describeMapping(fallback.mapping)}, which does not fit: ` +
        `${problems.join("; ")} (downstream: ${describePartitions(downSpec)}; upstream: ${describePartitions(upSpec)})`,
    };
  }
  if (readsMany(downSpec, upSpec, fallback.mapping)) {
    const suggestion = suggestedMapping(downSpec, upSpec);
    const what = downSpec === null ? `"${down.key}" is unpartitioned` : `each partition of "${down.key}" (${describePartitions(downSpec)})`;
    return {
      code: "GRAPH_MAPPING_REQUIRED",
      message:
        `${what} would read many partitions of "${up.key}" (${describePartitions(upSpec)}, in ${up.file}), ` +
        `but a dependency without a mapping gives the asset function a single value; ` +
        `state the mapping so the function receives an array: ${dep.name}: dep(${dep.name}, ${suggestion})` +
        (downSpec === null ? `, or dep(${dep.name}, lastPartition()) for the latest one only` : ""),
    };
  }
  return undefined;
}

/** Whether one downstream partition reads more than one upstream partition through `mapping`. */
export function readsMany(down: PartitionsSpec | null, up: PartitionsSpec | null, mapping: PartitionMappingSpec): boolean {
  if (up === null) return false;
  switch (mapping.kind) {
    case "identity":
    case "last":
      return false;
    case "all":
      return true;
    case "timeWindow":
      return mapping.startOffset !== 0 || mapping.endOffset !== 0 || down === null || finerThan(up, down);
    case "static": {
      const fedBy = new Map<string, number>();
      for (const targets of Object.values(mapping.map)) for (const t of targets) fedBy.set(t, (fedBy.get(t) ?? 0) + 1);
      return [...fedBy.values()].some((n) => n > 1);
    }
    case "multi": {
      // A single-dimension side stands for the dimension every entry names.
      const read = new Set<string | null>();
      for (const [name, d] of Object.entries(mapping.dimensions)) {
        const downDim = down?.kind === "multi" ? (down.dimensions.find((x) => x.name === name)?.partitions ?? null) : down;
        const upDim = up.kind === "multi" ? (up.dimensions.find((x) => x.name === d.upstreamDimension)?.partitions ?? null) : up;
        read.add(up.kind === "multi" ? d.upstreamDimension : null);
        if (readsMany(downDim, upDim, d.mapping)) return true;
      }
      // Upstream dimensions no entry reads are read in full.
      return up.kind === "multi" ? up.dimensions.some((u) => !read.has(u.name)) : !read.has(null);
    }
  }
}

const NOMINAL_MS = { hourly: 3_600_000, daily: 86_400_000, weekly: 604_800_000, monthly: 2_629_746_000 } as const;

/** Whether `a`'s time windows are shorter than `b`'s (hourly is finer than daily). */
function finerThan(a: PartitionsSpec, b: PartitionsSpec): boolean {
  const la = nominalWindowMs(a);
  const lb = nominalWindowMs(b);
  return la !== undefined && lb !== undefined && la < lb;
}

function nominalWindowMs(spec: PartitionsSpec): number | undefined {
  if (spec.kind !== "time") return undefined;
  if (spec.cadence !== "cron") return NOMINAL_MS[spec.cadence];
  return cronPeriodMs(spec.cron);
}

/** A rough window length for a cron cadence, from its fields: enough to order cadences. */
function cronPeriodMs(cron: string): number | undefined {
  const [minute, hour, dom, month, dow] = cron.trim().split(/\s+/);
  if (!minute || !hour || !dom || !month || !dow) return undefined;
  const count = (field: string, size: number): number => {
    if (field === "*") return size;
    const step = /^\*\/(\d+)$/.exec(field);
    if (step) return Math.ceil(size / Number(step[1]));
    return field.split(",").reduce((n, part) => {
      const range = /^(\d+)-(\d+)(?:\/(\d+))?$/.exec(part);
      return n + (range ? Math.floor((Number(range[2]) - Number(range[1])) / Number(range[3] ?? 1)) + 1 : 1);
    }, 0);
  };
  const perHour = count(minute, 60);
  const perDay = perHour * count(hour, 24);
  const days = dom === "*" && dow === "*" ? 30.44 : dom === "*" ? (count(dow, 7) * 30.44) / 7 : count(dom, 31);
  const perMonth = perDay * days * (count(month, 12) / 12);
  return perMonth > 0 ? NOMINAL_MS.monthly / perMonth : undefined;
}

function suggestedMapping(down: PartitionsSpec | null, up: PartitionsSpec | null): string {
  if (down === null || up === null) return "allPartitions()";
  if (down.kind === "time" && up.kind === "time") return "timeWindow()";
  if (up.kind === "static" && down.kind === "static") return "staticMapping({ ... })";
  return "allPartitions()";
}
