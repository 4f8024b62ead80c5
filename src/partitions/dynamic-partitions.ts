import { z } from "zod";
import { deepFreeze } from "./deep-freeze.js";
import { dynamicNameSchema, parseWith } from "./spec-schema.js";
import type { DynamicPartitionsSpec } from "./types.js";

const optionsSchema = z.strictObject({ name: dynamicNameSchema });

/**
 * Keys added at run time (`ctx.addDynamicPartitions(name, keys)`), kept in
 * the database in insertion order. Assets naming the same set share its keys.
 *
 * @example dynamicPartitions("customers")
 */
export function dynamicPartitions(name: string): DynamicPartitionsSpec {
  const o = parseWith(optionsSchema, { name }, "dynamicPartitions()");
  return deepFreeze({ kind: "dynamic", name: o.name });
}
