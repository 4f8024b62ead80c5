import { z } from "zod";
import { deepFreeze } from "./deep-freeze.js";
import { keyListSchema, parseWith } from "./spec-schema.js";
import type { StaticPartitionsSpec } from "./types.js";

const optionsSchema = z.strictObject({ keys: keyListSchema });

/**
 * A fixed list of keys; the list order is the partition order.
 * Keys are non-empty, unique and contain no "|".
 *
 * @example staticPartitions(["eu", "us", "apac"])
 */
export function staticPartitions(keys: readonly string[]): StaticPartitionsSpec {
  const o = parseWith(optionsSchema, { keys }, "staticPartitions()");
  return deepFreeze({ kind: "static", keys: [...o.keys] });
}
