import path from "node:path";
import { InputError } from "../errors/index.js";
import { AssetGraph, buildSnapshot, type SnapshotAsset, type SnapshotCheck } from "../graph/index.js";
import { declaredChecks, declaredUpstreams, definitionKind, type AssetDefinition, type CheckDefinition } from "../sdk/index.js";

/** What a test hands over: definitions, or modules of them (`import * as shop from "../asset-definitions/shop.js"`). */
export type DefinitionsInput = readonly unknown[];

/** The definitions of an in-memory materialisation, as a graph, and the code behind each of its nodes. */
export interface MemoryDefinitions {
  readonly graph: AssetGraph;
  /** The assets given in the list, as opposed to those found through their dependencies. */
  readonly listed: ReadonlySet<string>;
  /** Each definition's code under the file name its dispatches carry. */
  readonly modules: ReadonlyMap<string, Record<string, unknown>>;
}

/** The export name every synthetic module gives its one definition. */
export const EXPORT_NAME = "definition";

export function assetFile(key: string): string {
  return `memory:asset:${key}`;
}

export function checkFile(assetKey: string, name: string): string {
  return `memory:check:${assetKey}:${name}`;
}

/**
 * Collects the given definitions (module namespaces are searched one level deep), adds the upstream definitions
 * their dependencies name as objects and the checks declared on each asset's definition, and validates the whole as the loader would: a cycle, a dependency on an
 * asset that is neither given nor reachable, a mapping that does not fit, are errors naming the asset.
 */
export function memoryDefinitions(what: string, items: DefinitionsInput): MemoryDefinitions {
  if (!Array.isArray(items)) {
    throw new InputError(`${what}: the first argument must be an array of definitions (assets, source assets, checks) or modules of them`, {
      code: "MATERIALIZE_INPUT_INVALID",
    });
  }
  const assets = new Map<string, AssetDefinition>();
  const checks = new Map<string, CheckDefinition>();
  const add = (value: unknown, where: string, fromModule: boolean): void => {
    const kind = definitionKind(value);
    if (kind === "asset" || kind === "source") {
      const def = value as AssetDefinition;
      const seen = assets.get(def.key);
      if (seen && seen !== def) {
        throw new InputError(`${what}: ${where} is a second definition of asset "${def.key}"; give each asset once`, {
          code: "MATERIALIZE_DUPLICATE_ASSET",
          location: { assetKey: def.key },
        });
      }
      assets.set(def.key, def);
    } else if (kind === "check") {
      const def = value as CheckDefinition;
      checks.set(`${def.spec.assetKey}\u0000${def.spec.name}`, def);
    } else if (kind === "trigger" || fromModule) {
      // A trigger kind registers itself when its module is imported; other exports of a module are not definitions.
    } else if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      for (const [name, exported] of Object.entries(value)) add(exported, `${where}.${name}`, true);
    } else {
      throw new InputError(
        `${what}: ${where} is ${describe(value)}, not an asset, a source asset, a check or a module of them ` +
          `(an undefined value usually means an import that does not exist, or a circular import)`,
        { code: "MATERIALIZE_INPUT_INVALID" },
      );
    }
  };
  items.forEach((item, i) => add(item, `item ${i}`, false));
  const listed = new Set(assets.keys());
  // Upstreams the list does not hold, found through the dependencies that name them as objects.
  const queue = [...assets.values()];
  while (queue.length > 0) {
    for (const up of declaredUpstreams(queue.pop()!)) {
      if (assets.has(up.key)) continue;
      assets.set(up.key, up);
      queue.push(up);
    }
  }
  // The checks declared on the assets' definitions come with them; one given in the list under the same name wins.
  for (const def of assets.values()) {
    for (const c of declaredChecks(def)) {
      const id = `${c.spec.assetKey}\u0000${c.spec.name}`;
      if (!checks.has(id)) checks.set(id, c);
    }
  }
  const modules = new Map<string, Record<string, unknown>>();
  const snapshotAssets: SnapshotAsset[] = [];
  for (const def of assets.values()) {
    const file = assetFile(def.key);
    snapshotAssets.push({ ...def.spec, file: sourceOf(def.definedIn), exportName: EXPORT_NAME });
    modules.set(file, { [EXPORT_NAME]: def });
  }
  const snapshotChecks: SnapshotCheck[] = [];
  for (const def of checks.values()) {
    const file = checkFile(def.spec.assetKey, def.spec.name);
    snapshotChecks.push({ ...def.spec, file: sourceOf(def.definedIn), exportName: EXPORT_NAME });
    modules.set(file, { [EXPORT_NAME]: def });
  }
  const built = buildSnapshot([{ file: "memory", status: "ok", assets: snapshotAssets, checks: snapshotChecks }]);
  if (built.problems.length > 0) {
    const first = built.problems[0]!;
    const hint =
      first.code === "GRAPH_UNKNOWN_DEPENDENCY"
        ? "; add that asset's definition to the list (its values may then come from options.upstreams)"
        : "";
    const more = built.problems.length > 1 ? ` (and ${built.problems.length - 1} more problem(s))` : "";
    throw new InputError(`${what}: ${first.message}${hint}${more}`, {
      code: first.code,
      location: first.assetKey ? { assetKey: first.assetKey } : {},
    });
  }
  return { graph: AssetGraph.fromSnapshot(built.graph), listed, modules };
}

/** Where a definition was written, as problems name it: relative to the working directory. */
function sourceOf(definedIn: string | undefined): string {
  return definedIn ? path.relative(process.cwd(), definedIn).split(path.sep).join("/") : "(unknown file)";
}

export function describe(value: unknown): string {
  if (value === undefined) return "undefined";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value} (${JSON.stringify(value)})`;
}
