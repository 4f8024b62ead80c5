import { DefinitionError } from "../errors/index.js";
import { defaultMapping } from "./default-mapping.js";
import { describeMapping, describePartitions } from "./describe-partitions.js";
import { planMapping, type MappingPlan } from "./mapping-plan.js";
import type { PartitionMappingSpec, PartitionsSpec } from "./types.js";

/** The plan for `mapping` (or the default one) between two partitioned definitions; DefinitionError when there is none. */
export function resolvePlan(down: PartitionsSpec, up: PartitionsSpec, mapping: PartitionMappingSpec | null): MappingPlan {
  let chosen: PartitionMappingSpec;
  if (mapping !== null) chosen = mapping;
  else {
    const fallback = defaultMapping(down, up);
    if (fallback.mapping === null) {
      throw new DefinitionError(
        `no partition mapping between ${describePartitions(down)} (downstream) and ${describePartitions(up)} (upstream): ${fallback.reason}`,
      );
    }
    chosen = fallback.mapping;
  }
  const { plan, problems } = planMapping(down, up, chosen);
  if (!plan) throw new DefinitionError(`${describeMapping(chosen)} does not fit: ${problems.join("; ")}`);
  return plan;
}

/** An unpartitioned downstream reads all upstream partitions, or the latest one. */
export function unpartitionedDownstreamMapping(mapping: PartitionMappingSpec | null, up: PartitionsSpec): "all" | "last" {
  if (mapping === null || mapping.kind === "all") return "all";
  if (mapping.kind === "last") return "last";
  throw new DefinitionError(
    `${describeMapping(mapping)} does not apply to an unpartitioned downstream of ${describePartitions(up)}: use allPartitions() or lastPartition()`,
  );
}
