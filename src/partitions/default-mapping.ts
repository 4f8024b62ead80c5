import { describePartitions } from "./describe-partitions.js";
import type { AxisMapping } from "./mapping-plan.js";
import { allPartitions, identity, multiMapping, timeWindow } from "./partition-mappings.js";
import { specsEqual } from "./specs-equal.js";
import type { PartitionMappingSpec, PartitionsSpec, SingleDimensionPartitionsSpec } from "./types.js";

export type DefaultMapping =
  { readonly mapping: PartitionMappingSpec; readonly reason?: undefined } | { readonly mapping: null; readonly reason: string };

/**
 * The mapping a dependency gets when it states none:
 * - either side unpartitioned → allPartitions();
 * - equal definitions → identity();
 * - time ↔ time (other cadence or start), same timezone → timeWindow();
 * - multi ↔ single where exactly one dimension of the multi pairs with the
 *   single one as above → multiMapping() on that dimension (the others are
 *   read in full / do not constrain);
 * - multi ↔ multi with the same dimension names, each pairing as above → multiMapping() on all;
 * - otherwise none, with the reason.
 *
 * @example defaultMapping(daily({ start: "2025-01-01" }), hourly({ start: "2025-01-01" })) // { mapping: timeWindow() }
 */
export function defaultMapping(down: PartitionsSpec | null, up: PartitionsSpec | null): DefaultMapping {
  if (down === null || up === null) return { mapping: allPartitions() };
  if (specsEqual(down, up)) return { mapping: identity() };
  if (down.kind !== "multi" && up.kind !== "multi") {
    const single = pairDefault(down, up);
    return typeof single === "string" ? { mapping: null, reason: single } : { mapping: single };
  }
  if (down.kind === "multi" && up.kind === "multi") {
    const downNames = down.dimensions.map((d) => d.name);
    const upNames = up.dimensions.map((d) => d.name);
    if ([...downNames].sort().join("|") !== [...upNames].sort().join("|")) {
      return {
        mapping: null,
        reason: `the multi definitions have different dimensions (${downNames.join(", ")} vs ${upNames.join(", ")})`,
      };
    }
    const entries: [string, { upstreamDimension: string; mapping: PartitionMappingSpec }][] = [];
    for (const d of down.dimensions) {
      const u = up.dimensions.find((x) => x.name === d.name)!;
      const pair = pairDefault(d.partitions, u.partitions);
      if (typeof pair === "string") return { mapping: null, reason: `dimension "${d.name}": ${pair}` };
      entries.push([d.name, { upstreamDimension: d.name, mapping: pair }]);
    }
    return { mapping: multiMapping(Object.fromEntries(entries)) };
  }
  const single = (down.kind === "multi" ? up : down) as SingleDimensionPartitionsSpec;
  const multi = down.kind === "multi" ? down : up.kind === "multi" ? up : undefined;
  const candidates = multi!.dimensions.flatMap((d) => {
    const pair = down.kind === "multi" ? pairDefault(d.partitions, single) : pairDefault(single, d.partitions);
    return typeof pair === "string" ? [] : [{ name: d.name, mapping: pair }];
  });
  if (candidates.length !== 1) {
    const reason =
      candidates.length === 0
        ? `no dimension of ${describePartitions(multi!)} pairs with ${describePartitions(single)}`
        : `several dimensions of ${describePartitions(multi!)} pair with ${describePartitions(single)} (${candidates.map((c) => c.name).join(", ")})`;
    return { mapping: null, reason };
  }
  const { name, mapping } = candidates[0]!;
  return { mapping: multiMapping({ [name]: { upstreamDimension: name, mapping } }) };
}

/** The default between two single dimensions, or why there is none. */
function pairDefault(down: SingleDimensionPartitionsSpec, up: SingleDimensionPartitionsSpec): AxisMapping | string {
  if (specsEqual(down, up)) return identity();
  if (down.kind === "time" && up.kind === "time") {
    if (down.timezone !== up.timezone) return `time partitions in different timezones (${down.timezone} and ${up.timezone})`;
    return timeWindow();
  }
  return `no default mapping between ${describePartitions(down)} and ${describePartitions(up)}`;
}
