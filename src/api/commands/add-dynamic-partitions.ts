import { localGuard, type Guard } from "../../access/index.js";
import { InputError } from "../../errors/index.js";
import { dynamicNames, partitionKeyProblem } from "../../partitions/index.js";
import type { DefinitionStore, GraphCache } from "../../storage/index.js";

/** Most keys one call may add (larger sets: several calls). */
export const MAX_DYNAMIC_KEYS_PER_CALL = 10_000;

export interface AddedDynamicPartitions {
  readonly name: string;
  /** Keys that were new, in the order given (keys already there are left alone). */
  readonly added: readonly string[];
  readonly total: number;
}

/**
 * Adds keys to a dynamic partitions definition that an asset of the current
 * definitions uses. Idempotent per key; a bad key or an unknown name writes nothing.
 */
export async function addDynamicPartitions(
  services: { graphs: GraphCache; definitions: Pick<DefinitionStore, "addDynamicPartitions" | "listDynamicPartitions"> },
  request: { name: string; keys: readonly string[] },
  guard: Guard = localGuard(),
): Promise<AddedDynamicPartitions> {
  const { graph } = await services.graphs.current({ fresh: true });
  const known = new Set(graph.assets.flatMap((a) => (a.partitions ? dynamicNames(a.partitions) : [])));
  if (!known.has(request.name)) {
    throw new InputError(
      `no asset uses dynamic partitions named "${request.name}"` +
        (known.size
          ? `; the definitions use ${[...known]
              .sort()
              .map((n) => `"${n}"`)
              .join(", ")}`
          : "; no asset has dynamic partitions"),
      { code: "DYNAMIC_PARTITIONS_UNKNOWN", location: { field: "name" } },
    );
  }
  if (request.keys.length === 0 || request.keys.length > MAX_DYNAMIC_KEYS_PER_CALL) {
    throw new InputError(`keys: give 1 to ${MAX_DYNAMIC_KEYS_PER_CALL} keys per call (got ${request.keys.length})`, {
      code: "INPUT_INVALID",
      location: { field: "keys" },
    });
  }
  request.keys.forEach((key, i) => {
    const problem = partitionKeyProblem(key);
    if (problem) throw new InputError(`keys[${i}]: ${problem}`, { code: "PARTITION_KEY_INVALID", location: { field: `keys[${i}]` } });
  });
  const audit = await guard.authorize("addDynamicPartitions", "operator", {
    assets: graph.assets.filter((a) => a.partitions !== null && dynamicNames(a.partitions).includes(request.name)).map((a) => a.key),
    partitions: request.keys,
    detail: { name: request.name },
  });
  const added = await services.definitions.addDynamicPartitions(request.name, request.keys, audit);
  const total = (await services.definitions.listDynamicPartitions(request.name)).length;
  return { name: request.name, added, total };
}
