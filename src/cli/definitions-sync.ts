import type { PreviousDefinitions, SnapshotAsset, SnapshotCheck } from "../graph/index.js";
import { specHash } from "../partitions/index.js";
import type { FileLoadResult, LoadDefinitionsResult } from "../loader/index.js";
import { loadDefinitions } from "../loader/index.js";
import type { DefinitionStore } from "../storage/index.js";

export interface SyncOutcome {
  version: number;
  changed: boolean;
  result: LoadDefinitionsResult;
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
 * Persists one load: every file's outcome (errors stay per file; a failing
 * file keeps its last good definitions), graph problems, and — only when the
 * content hash changed — a new snapshot version and the assets table.
 */
export async function persistLoad(
  store: DefinitionStore,
  result: LoadDefinitionsResult,
  options: { reloaded?: readonly string[]; removed?: readonly string[] } = {},
): Promise<{ version: number; changed: boolean }> {
  const reloaded = options.reloaded ? new Set(options.reloaded) : undefined;
  const problemsByFile = new Map<string, LoadDefinitionsResult["problems"]>();
  for (const p of result.problems) {
    for (const file of p.files.length > 0 ? p.files : p.file ? [p.file] : []) {
      problemsByFile.set(file, [...(problemsByFile.get(file) ?? []), p]);
    }
  }
  const toRecord: FileLoadResult[] = result.files.filter((f) => !reloaded || reloaded.has(f.file) || problemsByFile.has(f.file));
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

/** Loads every definitions file and persists the outcome. */
export async function syncDefinitions(
  store: DefinitionStore,
  options: { dir: string; timeoutMs: number },
): Promise<SyncOutcome> {
  const previousGood = await previousGoodFromStore(store);
  const result = await loadDefinitions({ dir: options.dir, timeoutMs: options.timeoutMs, previousGood });
  const known = new Set(result.files.map((f) => f.file));
  const removed = [...previousGood.keys()].filter((f) => !known.has(f));
  const saved = await persistLoad(store, result, { removed });
  return { ...saved, result };
}
