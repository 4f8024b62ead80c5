import type { GraphProblem, PreviousDefinitions, SnapshotAsset, SnapshotCheck } from "../graph/index.js";
import { specHash } from "../partitions/index.js";
import type { FileLoadResult, LoadDefinitionsResult } from "../loader/index.js";
import { loadDefinitions } from "../loader/index.js";
import type { DefinitionStore } from "../storage/index.js";

export interface SyncOutcome {
  version: number;
  changed: boolean;
  result: LoadDefinitionsResult;
}

/**
 * What the previous load left in storage: each file's last good definitions
 * (standing in for files that fail to load now) and the file each asset key
 * was loaded from (deciding which definition of a duplicated key stays).
 */
export async function lastLoadFromStore(
  store: DefinitionStore,
): Promise<{ previousGood: Map<string, PreviousDefinitions>; previousOwners: Map<string, string> }> {
  const [previousGood, previousOwners] = await Promise.all([previousGoodFromStore(store), previousOwnersFromStore(store)]);
  return { previousGood, previousOwners };
}

/**
 * Asset key → the file it was last loaded from. Removed assets count too:
 * a key that left the graph (say, for a problem in an upstream file) is
 * still not taken over by a copy of it that appeared meanwhile.
 */
export async function previousOwnersFromStore(store: DefinitionStore): Promise<Map<string, string>> {
  const assets = await store.listAssets({ includeRemoved: true });
  return new Map(assets.map((a) => [a.key, a.file]));
}

/** Each file's last good definitions, as stored, for files that fail to load now. */
export async function previousGoodFromStore(store: DefinitionStore): Promise<Map<string, PreviousDefinitions>> {
  const files = await store.listFiles();
  const out = new Map<string, PreviousDefinitions>();
  for (const f of files) {
    if (f.lastSuccessAt) {
      out.set(f.path, {
        assets: f.assets as unknown as SnapshotAsset[],
        checks: (f.checks ?? []) as unknown as SnapshotCheck[],
      });
    }
  }
  return out;
}

/**
 * Persists one load in one transaction: every reloaded file's outcome
 * (errors stay per file; a failing file keeps its last good definitions),
 * the graph problems of every file (recomputed from the whole load, so a
 * problem goes when its cause is fixed in another file), and — only when the
 * content hash changed — a new snapshot version and the assets table.
 */
export function persistLoad(
  store: DefinitionStore,
  result: LoadDefinitionsResult,
  options: { reloaded?: readonly string[]; removed?: readonly string[] } = {},
): Promise<{ version: number; changed: boolean }> {
  return store.transaction((tx) => persistLoadIn(tx, result, options));
}

async function persistLoadIn(
  store: DefinitionStore,
  result: LoadDefinitionsResult,
  options: { reloaded?: readonly string[]; removed?: readonly string[] },
): Promise<{ version: number; changed: boolean }> {
  const reloaded = options.reloaded ? new Set(options.reloaded) : undefined;
  const problemsByFile = problemsOfFiles(result.problems);
  const toRecord: FileLoadResult[] = result.files.filter((f) => !reloaded || reloaded.has(f.file));
  for (const f of toRecord) {
    await store.recordFileLoad({
      path: f.file,
      sourceHash: f.sourceHash,
      status: f.status,
      ...(f.error ? { error: f.error } : {}),
      warnings: f.warnings,
      problems: problemsByFile.get(f.file) ?? [],
      assets: f.assets,
      checks: f.checks,
      loadMs: f.loadMs,
    });
  }
  if (options.removed?.length) await store.deleteFiles(options.removed);
  await store.replaceProblems(problemsByFile);
  const saved = await store.saveSnapshot({ contentHash: result.contentHash, graph: result.snapshot });
  if (saved.changed) {
    await store.syncAssets(
      saved.version,
      result.snapshot.assets.map((a) => ({
        key: a.key,
        file: a.file,
        spec: a,
        groupName: a.group,
        owner: a.owner,
        isSource: a.kind === "source",
        partitionsHash: a.partitions ? specHash(a.partitions) : null,
      })),
    );
  }
  return saved;
}

/**
 * Each file's graph problems: those that leave out one of its own
 * definitions. A file a problem merely mentions (the kept definition of a
 * duplicated key, the upstream of a mapping) is not in error for it.
 */
export function problemsOfFiles(problems: readonly GraphProblem[]): Map<string, GraphProblem[]> {
  const out = new Map<string, GraphProblem[]>();
  for (const p of problems) {
    if (p.file === null) continue;
    const list = out.get(p.file);
    if (list) list.push(p);
    else out.set(p.file, [p]);
  }
  return out;
}

/** Loads every definitions file and persists the outcome. */
export async function syncDefinitions(
  store: DefinitionStore | Promise<DefinitionStore>,
  options: { dir: string; timeoutMs: number },
): Promise<SyncOutcome> {
  // A store still opening: the files are imported in their child processes meanwhile.
  const previous = Promise.resolve(store).then(lastLoadFromStore);
  previous.catch(() => undefined); // awaited by the load; a failure is reported from there
  const result = await loadDefinitions({ dir: options.dir, timeoutMs: options.timeoutMs, previous });
  const { previousGood } = await previous;
  const known = new Set(result.files.map((f) => f.file));
  const removed = [...previousGood.keys()].filter((f) => !known.has(f));
  const saved = await persistLoad(await store, result, { removed });
  return { ...saved, result };
}
