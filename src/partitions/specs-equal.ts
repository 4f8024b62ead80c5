import type { PartitionMappingSpec, PartitionsSpec } from "./types.js";

type Spec = PartitionsSpec | PartitionMappingSpec;

/**
 * JSON with object keys sorted (arrays keep their order: it is meaningful for
 * static keys and dimensions), so equal specs serialise identically however
 * they were built.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/**
 * Whether two partitions definitions (or two mappings) are the same: same
 * partitions, same keys, same order. `null` (unpartitioned) equals only `null`.
 */
export function specsEqual(a: Spec | null, b: Spec | null): boolean {
  if (a === b) return true;
  if (a === null || b === null) return false;
  return canonicalOf(a) === canonicalOf(b);
}

// Specs are immutable (frozen by the SDK, readonly when read back from a
// snapshot), so an object's canonical JSON never changes: compute it once.
// Planning and input resolution compare the same specs for every step.
const canonicalCache = new WeakMap<object, string>();
function canonicalOf(spec: Spec): string {
  let text = canonicalCache.get(spec);
  if (text === undefined) {
    text = canonicalJson(spec);
    canonicalCache.set(spec, text);
  }
  return text;
}

/**
 * A stable 16-hex-digit hash of a spec (FNV-1a 64 over its canonical JSON):
 * equal specs hash equal across processes and versions. Lets storage notice
 * that an asset's partitions definition changed.
 */
export function specHash(spec: Spec | null): string {
  const text = spec === null ? "null" : canonicalOf(spec);
  let hash = 0xcbf29ce484222325n;
  const prime = 0x100000001b3n;
  const mask = 0xffffffffffffffffn;
  for (const byte of new TextEncoder().encode(text)) {
    hash = ((hash ^ BigInt(byte)) * prime) & mask;
  }
  return hash.toString(16).padStart(16, "0");
}
