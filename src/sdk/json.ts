import { DefinitionError } from "../errors/index.js";

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * Definitions are stored as JSON, so every config value must survive
 * JSON.stringify unchanged. Returns the path of the first offending value.
 * @example findNonJson({ at: new Date(), rows: [1, NaN] }, "metadata") // "metadata.at (a Date; only plain objects, …)"
 */
export function findNonJson(value: unknown, path: string, seen = new Set<object>()): string | undefined {
  if (value === null || typeof value === "string" || typeof value === "boolean") return undefined;
  if (typeof value === "number") return Number.isFinite(value) ? undefined : `${path} (${value})`;
  if (typeof value !== "object") return `${path} (a ${typeof value})`;
  if (seen.has(value)) return `${path} (a circular reference)`;
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const bad = findNonJson(value[i], `${path}[${i}]`, seen);
        if (bad) return bad;
      }
      return undefined;
    }
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) {
      const name = (value as { constructor?: { name?: string } }).constructor?.name ?? "object";
      return `${path} (a ${name}; only plain objects, arrays, strings, finite numbers, booleans and null are stored)`;
    }
    for (const [k, v] of Object.entries(value)) {
      const bad = findNonJson(v, path ? `${path}.${k}` : k, seen);
      if (bad) return bad;
    }
    return undefined;
  } finally {
    seen.delete(value);
  }
}

export function assertJson(value: unknown, field: string): asserts value is JsonValue {
  const bad = findNonJson(value, field);
  if (bad) {
    throw new DefinitionError(`field "${field}": value at ${bad} cannot be stored as JSON`, {
      location: { field },
      code: "DEFINITION_NOT_SERIALIZABLE",
    });
  }
}

/**
 * Deep-freezes a plain JSON-like structure in place and returns it.
 * @example const spec = deepFreeze({ kind: "static", keys: ["eu", "us"] }); // spec.keys.push("x") throws
 */
export function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
