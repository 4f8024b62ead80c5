import { defaultMapping } from "./default-mapping.js";
import { describeMapping, describePartitions } from "./describe-partitions.js";
import { DEFAULT_NAMES, dimensionsOf, identityCompatible, planMapping, type AxisMapping, type Names } from "./mapping-plan.js";
import { dynamicNames, spaceOf } from "./partition-space.js";
import type { PartitionMappingSpec, PartitionsSpec } from "./types.js";

/**
 * Human-readable problems with reading `up` from `down` through `mapping`
 * (`null`: the default mapping); empty when it fits. `names` are the asset
 * keys to use in messages:
 * `time partitions in different timezones: sales/orders is Europe/Berlin, sales/revenue is UTC`.
 *
 * @example validateMapping(daily({ start: "2025-01-01" }), staticPartitions(["eu"]), timeWindow())
 * // ['timeWindow() needs time partitions on both sides (downstream is daily(…), upstream is static(eu))']
 */
export function validateMapping(
  down: PartitionsSpec | null,
  up: PartitionsSpec | null,
  mapping: PartitionMappingSpec | null,
  names: Partial<Names> = {},
): string[] {
  const n: Names = { ...DEFAULT_NAMES, ...names };
  let chosen: PartitionMappingSpec;
  if (mapping !== null) chosen = mapping;
  else {
    const fallback = defaultMapping(down, up);
    if (fallback.mapping === null) return [`no default partition mapping from ${n.upstream} to ${n.downstream}: ${fallback.reason}`];
    chosen = fallback.mapping;
  }
  const what = describeMapping(chosen);
  if (up === null) {
    return chosen.kind === "all" || chosen.kind === "last"
      ? []
      : [`${n.upstream} is unpartitioned: every partition of ${n.downstream} reads its single partition, so ${what} does not apply`];
  }
  if (down === null) {
    return chosen.kind === "all" || chosen.kind === "last"
      ? []
      : [
          `${n.downstream} is unpartitioned: it reads all partitions of ${n.upstream} (allPartitions()) or the latest (lastPartition()), so ${what} does not apply`,
        ];
  }
  const { plan, problems } = planMapping(down, up, chosen, n);
  if (!plan) return [...problems];
  const out: string[] = [];
  if (plan.kind === "whole") {
    if (plan.mapping.kind === "static") out.push(...staticKeyProblems(down, up, plan.mapping.map, n));
    return out;
  }
  const downDims = dimensionsOf(down);
  const upDims = dimensionsOf(up);
  const readers = new Map<string | null, string[]>();
  for (const link of plan.links) {
    const d = downDims.find((x) => x.name === link.down) ?? downDims[0]!;
    const u = upDims.find((x) => x.name === link.up) ?? upDims[0]!;
    const downName = link.down === null || down.kind !== "multi" ? n.downstream : `${n.downstream} dimension "${link.down}"`;
    const upName = link.up === null || up.kind !== "multi" ? n.upstream : `${n.upstream} dimension "${link.up}"`;
    readers.set(link.up, [...(readers.get(link.up) ?? []), String(link.down)]);
    out.push(...linkProblems(d.spec, u.spec, link.mapping, { downstream: downName, upstream: upName }));
  }
  if (chosen.kind === "multi" && up.kind === "multi") {
    for (const [upDim, downDimsReading] of readers) {
      if (downDimsReading.length > 1) {
        out.push(`multiMapping() entries ${downDimsReading.map((x) => `"${x}"`).join(" and ")} all read upstream dimension "${upDim}"`);
      }
    }
  }
  return out;
}

function linkProblems(down: PartitionsSpec, up: PartitionsSpec, mapping: AxisMapping, n: Names): string[] {
  const timezones = () =>
    down.kind === "time" && up.kind === "time" && down.timezone !== up.timezone
      ? [`time partitions in different timezones: ${n.upstream} is ${up.timezone}, ${n.downstream} is ${down.timezone}`]
      : [];
  switch (mapping.kind) {
    case "timeWindow":
      return timezones();
    case "identity": {
      if (down.kind === "multi" || up.kind === "multi" || identityCompatible(down, up)) return [];
      const zones = timezones();
      if (zones.length > 0) return zones;
      if (down.kind === "static" && up.kind === "static") {
        const absent = down.keys.filter((k) => !up.keys.includes(k));
        return [`identity(): keys of ${n.downstream} that ${n.upstream} does not have: ${absent.map((k) => `"${k}"`).join(", ")}`];
      }
      return [
        `identity() between different partitions: ${n.downstream} is ${describePartitions(down)}, ${n.upstream} is ${describePartitions(up)}; use ${down.kind === "time" && up.kind === "time" ? "timeWindow()" : "staticMapping() or multiMapping()"}`,
      ];
    }
    case "static":
      return staticKeyProblems(down, up, mapping.map, n);
    case "all":
    case "last":
      return [];
  }
}

/** Keys a static mapping names that the (non-dynamic) definitions do not have. */
function staticKeyProblems(down: PartitionsSpec, up: PartitionsSpec, map: Readonly<Record<string, readonly string[]>>, n: Names): string[] {
  const out: string[] = [];
  const check = (spec: PartitionsSpec, keys: Iterable<string>, side: string, name: string) => {
    if (dynamicNames(spec).length > 0) return; // keys arrive at run time
    const space = spaceOf(spec);
    const absent = [...new Set(keys)].filter((k) => !space.has(k));
    if (absent.length > 0) {
      const shown = absent
        .slice(0, 10)
        .map((k) => `"${k}"`)
        .join(", ");
      out.push(
        `staticMapping() names ${side} keys that are not partitions of ${name} (${space.describe()}): ${shown}${absent.length > 10 ? ", …" : ""}`,
      );
    }
  };
  check(up, Object.keys(map), "upstream", n.upstream);
  check(down, Object.values(map).flat(), "downstream", n.downstream);
  return out;
}
