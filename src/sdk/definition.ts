/**
 * Definitions carry a registry-wide brand so the loader recognises them even
 * when a definitions file reached the SDK through a different module instance.
 */
export const DEFINITION_BRAND: unique symbol = Symbol.for("tributary.definition") as never;

/** `trigger`: a custom trigger kind (triggerKind()), which the triggerer loads rather than the graph. */
export type DefinitionKind = "asset" | "source" | "check" | "trigger";

export interface Branded {
  readonly [DEFINITION_BRAND]: DefinitionKind;
}

/**
 * What a definitions file exports, by its brand: an asset, a source asset, a check or a trigger kind; undefined for
 * anything else.
 * @example
 * // given exported: Record<string, unknown>
 * Object.entries(exported).filter(([, value]) => definitionKind(value) === "asset");
 */
export function definitionKind(value: unknown): DefinitionKind | undefined {
  if (value === null || (typeof value !== "object" && typeof value !== "function")) return undefined;
  const kind = (value as Partial<Branded>)[DEFINITION_BRAND];
  return kind === "asset" || kind === "source" || kind === "check" || kind === "trigger" ? kind : undefined;
}

/**
 * The file that called asset()/sourceAsset()/check(), from the call stack, so
 * the loader can tell a file's own definitions from ones it imported.
 */
export function callerFile(): string | undefined {
  const stack = new Error().stack ?? "";
  for (const line of stack.split("\n").slice(1)) {
    const m = /\(?((?:file:\/\/)?\/[^():]+|[A-Za-z]:\\[^():]+):\d+:\d+\)?\s*$/.exec(line);
    if (!m?.[1]) continue;
    const file = m[1].startsWith("file://") ? decodeURIComponent(m[1].slice("file://".length)) : m[1];
    if (file.includes("/src/sdk/") || file.includes("\\src\\sdk\\") || file.includes("node_modules")) continue;
    if (file.startsWith("node:")) continue;
    return file;
  }
  return undefined;
}
