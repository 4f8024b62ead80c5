import { DefinitionError } from "../errors/index.js";
import { deepFreeze } from "./deep-freeze.js";
import { DIMENSION_SEPARATOR, dimensionsProblem, formatPath, parseSingleDimensionSpec } from "./spec-schema.js";
import type { MultiPartitionsSpec, SingleDimensionPartitionsSpec } from "./types.js";

/**
 * The product of two or more single-dimension definitions, at most one of
 * them time-based. Dimension order is the object's key order, and keys read
 * the dimensions' keys in that order, joined by "|": `eu|2025-03-15`.
 *
 * @example multiPartitions({ region: staticPartitions(["eu", "us"]), date: daily({ start: "2025-01-01" }) })
 */
export function multiPartitions(dimensions: Readonly<Record<string, SingleDimensionPartitionsSpec>>): MultiPartitionsSpec {
  const where = "multiPartitions()";
  if (typeof dimensions !== "object" || dimensions === null || Array.isArray(dimensions)) {
    throw new DefinitionError(`${where}: expected an object of dimensions, e.g. { region: staticPartitions([...]), date: daily({...}) }`);
  }
  const list = Object.entries(dimensions).map(([name, partitions]) => ({
    name,
    partitions: parseSingleDimensionSpec(partitions, where, [name]),
  }));
  const problem = dimensionsProblem(list);
  if (problem) {
    const index = problem.path[0];
    const field = typeof index === "number" ? formatPath([list[index]!.name]) : "";
    const message = field === "" ? `${where}: ${problem.message}` : `${where}: field "${field}": ${problem.message}`;
    throw new DefinitionError(message, field === "" ? {} : { location: { field } });
  }
  return deepFreeze({ kind: "multi", dimensions: list });
}

/**
 * The multi key of one key per dimension, in the definition's dimension order.
 *
 * @example
 * // given spec: MultiPartitionsSpec
 * multiPartitionKey(spec, { date: "2025-03-15", region: "eu" }) // "eu|2025-03-15" for { region, date }
 */
export function multiPartitionKey(spec: MultiPartitionsSpec, keys: Readonly<Record<string, string>>): string {
  return spec.dimensions
    .map((d) => {
      const key = keys[d.name];
      if (key === undefined)
        throw new DefinitionError(`multiPartitionKey(): no key for dimension "${d.name}"`, { location: { field: d.name } });
      return key;
    })
    .join(DIMENSION_SEPARATOR);
}
