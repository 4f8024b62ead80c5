import { hashSnapshot } from "./canonical-json.js";
import { cmp, type GraphProblem } from "./graph-problem.js";
import type { DefinitionsSnapshot, SnapshotAsset, SnapshotCheck } from "./snapshot.js";
import { analyzeGraph } from "./validate-graph.js";

/** What one definitions file contributed to a load (the loader's per-file result fits). */
export interface FileDefinitions {
  readonly file: string;
  readonly status: "ok" | "error";
  readonly assets: readonly SnapshotAsset[];
  readonly checks: readonly SnapshotCheck[];
}

/** A file's definitions at its last good load: its assets, optionally with its checks. */
export type PreviousDefinitions =
  readonly SnapshotAsset[] | { readonly assets: readonly SnapshotAsset[]; readonly checks?: readonly SnapshotCheck[] };

export interface BuiltSnapshot {
  /** The active graph: every valid definition, sorted. */
  readonly graph: DefinitionsSnapshot;
  /** sha256 of the canonical JSON of `graph`: equal definitions hash equal, whatever the load order. */
  readonly contentHash: string;
  /** Why each left-out definition was left out. */
  readonly problems: GraphProblem[];
  /** Files that failed to load and whose last good definitions stand in for them, sorted. */
  readonly fallbackFiles: string[];
}

/**
 * Assembles the active asset graph from per-file load results.
 *
 * A file that failed to load keeps scheduling with its last good definitions
 * (`previousGood`, which the caller reads from storage); entries for files
 * that loaded fine or no longer exist are ignored. When two files define one
 * key, the definition in the file `previousOwners` names for that key (the
 * file it was loaded from before) stays and the other is in error; with no
 * such file, neither is loaded. Invalid definitions, and everything
 * downstream of them, are left out with a problem each; everything else
 * stays, so one bad file never stops the rest.
 * @example
 * // given files: readonly FileDefinitions[], lastGood: ReadonlyMap<string, PreviousDefinitions>, owners: ReadonlyMap<string, string>
 * const { graph, contentHash, problems } = buildSnapshot(files, lastGood, owners);
 */
export function buildSnapshot(
  fileResults: readonly FileDefinitions[],
  previousGood: ReadonlyMap<string, PreviousDefinitions> = new Map(),
  previousOwners: ReadonlyMap<string, string> = new Map(),
): BuiltSnapshot {
  const assets: SnapshotAsset[] = [];
  const checks: SnapshotCheck[] = [];
  const fallbackFiles = new Set<string>();
  for (const r of [...fileResults].sort((a, b) => cmp(a.file, b.file))) {
    if (r.status === "ok") {
      assets.push(...r.assets);
      checks.push(...r.checks);
      continue;
    }
    const prev = previousGood.get(r.file);
    if (prev === undefined) continue;
    fallbackFiles.add(r.file);
    // The stand-ins belong to this file whatever the stored copy says.
    assets.push(...previousAssets(prev).map((a) => (a.file === r.file ? a : { ...a, file: r.file })));
    checks.push(...previousChecks(prev).map((c) => (c.file === r.file ? c : { ...c, file: r.file })));
  }
  const analysis = analyzeGraph(assets, checks, { fallbackFiles, previousFileOf: previousOwners });
  const graph: DefinitionsSnapshot = { assets: analysis.assets, checks: analysis.checks };
  return { graph, contentHash: hashSnapshot(graph), problems: analysis.problems, fallbackFiles: [...fallbackFiles].sort(cmp) };
}

function previousAssets(prev: PreviousDefinitions): readonly SnapshotAsset[] {
  return isAssetList(prev) ? prev : prev.assets;
}

function previousChecks(prev: PreviousDefinitions): readonly SnapshotCheck[] {
  return isAssetList(prev) ? [] : (prev.checks ?? []);
}

function isAssetList(prev: PreviousDefinitions): prev is readonly SnapshotAsset[] {
  return Array.isArray(prev);
}
