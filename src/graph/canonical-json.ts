import { createHash } from "node:crypto";
import { SNAPSHOT_FORMAT_VERSION, type DefinitionsSnapshot } from "./snapshot.js";

/**
 * JSON with object keys sorted at every level, so the same value always gives
 * the same text whatever order its properties were created in. `undefined`
 * properties are dropped, as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") {
    const text = JSON.stringify(value);
    // JSON.stringify(undefined) is undefined; inside arrays JSON uses null.
    return text === undefined ? "null" : text;
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.keys(value)
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(",")}}`;
}

/** sha256 (hex) of the canonical JSON of a snapshot; equal definitions hash equal. */
export function hashSnapshot(snapshot: DefinitionsSnapshot): string {
  return createHash("sha256")
    .update(canonicalJson({ format: SNAPSHOT_FORMAT_VERSION, assets: snapshot.assets, checks: snapshot.checks }))
    .digest("hex");
}
