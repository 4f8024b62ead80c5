import { cmp, compareProblems, type GraphProblem, type GraphProblemCode } from "./graph-problem.js";
import { partitionSpace } from "../partitions/index.js";
import { checkDependencyMapping } from "./partition-deps.js";
import type { SnapshotAsset, SnapshotCheck } from "./snapshot.js";
import { didYouMean } from "./suggest-key.js";

export interface ValidateGraphOptions {
  /**
   * Files whose definitions are stand-ins from the last good load (the file
   * failed to load this time). Unless `previousFileOf` names its file, a
   * freshly loaded definition wins a duplicate key against a stand-in: the
   * stand-in is only a guess at what the file holds.
   */
  readonly fallbackFiles?: ReadonlySet<string>;
  /**
   * key → the file its definition was loaded from before (the active graph of
   * the last load). When several definitions share a key, the one in that
   * file is kept and the others are in error, so copying a file and
   * forgetting to change a key never takes the original (and everything
   * downstream of it) offline. Without an entry, none of them is kept.
   */
  readonly previousFileOf?: ReadonlyMap<string, string>;
}

/** The graph's problems and what remains active once the faulty definitions are left out. */
export interface GraphAnalysis {
  /** Sorted by file, asset key, check name, code. */
  readonly problems: GraphProblem[];
  /** The assets that remain, sorted by key; keys are unique and the graph acyclic. */
  readonly assets: SnapshotAsset[];
  readonly checks: SnapshotCheck[];
}

/**
 * Checks a set of definitions as one graph: cycles, duplicate keys, unknown
 * dependencies, partition mappings, checks on unknown assets. Each problem
 * names the file, the asset and the field, and says what to do.
 * @example
 * // given assets: readonly SnapshotAsset[], checks: readonly SnapshotCheck[]
 * for (const p of validateGraph(assets, checks)) console.error(p.message);
 */
export function validateGraph(
  assets: readonly SnapshotAsset[],
  checks: readonly SnapshotCheck[] = [],
  options: ValidateGraphOptions = {},
): GraphProblem[] {
  return analyzeGraph(assets, checks, options).problems;
}

/**
 * validateGraph, plus the active graph: every definition with a problem is
 * left out, and so is everything that depends on a left-out asset (each with
 * a problem naming the cause); everything else stays.
 */
export function analyzeGraph(
  inputAssets: readonly SnapshotAsset[],
  inputChecks: readonly SnapshotCheck[] = [],
  options: ValidateGraphOptions = {},
): GraphAnalysis {
  const fallbackFiles = options.fallbackFiles ?? new Set<string>();
  // Sorted input makes every decision below independent of load order.
  const assets = [...inputAssets].sort((a, b) => cmp(a.key, b.key) || cmp(a.file, b.file) || cmp(a.exportName, b.exportName));
  const checks = [...inputChecks].sort(
    (a, b) => cmp(a.assetKey, b.assetKey) || cmp(a.name, b.name) || cmp(a.file, b.file) || cmp(a.exportName, b.exportName),
  );
  const problems: GraphProblem[] = [];

  // 1. Duplicate keys: keep at most one definition per key.
  const byKey = new Map<string, SnapshotAsset>();
  /** Keys whose every definition was left out; dependents are excluded, not "unknown". */
  const droppedKeys = new Map<string, SnapshotAsset>();
  for (const group of groupBy(assets, (a) => a.key)) {
    const first = group[0]!;
    if (group.length === 1) {
      byKey.set(first.key, first);
      continue;
    }
    const winner = pickDuplicateWinner(group, fallbackFiles, options.previousFileOf);
    if (winner) byKey.set(winner.key, winner);
    else droppedKeys.set(first.key, first);
    const list = group.map((a) => `${a.file} (export ${a.exportName})`).join(" and ");
    for (const a of group) {
      if (a === winner) continue;
      const outcome = winner
        ? `the definition in ${winner.file} (export ${winner.exportName}) is kept ` +
          (winner.file === options.previousFileOf?.get(winner.key)
            ? `because the key was loaded from there before` +
              (fallbackFiles.has(winner.file) ? ` (${winner.file} fails to load now, so its last good definitions stand in)` : "")
            : `because ${a.file} failed to load and this one is its last good definition`) +
          `; this one is not loaded`
        : `none of them is loaded until all but one are renamed or removed`;
      problems.push(
        problem("GRAPH_DUPLICATE_KEY", a, {
          files: group.map((g) => g.file),
          message: `${where(a)}: the key is defined more than once, in ${list}; keys must be unique, so rename or remove one. ${capitalise(outcome)}`,
        }),
      );
    }
  }

  // 2. Dependencies: every one must exist and be readable through its mapping.
  const ownProblem = new Set<string>();
  const allKeys = [...byKey.keys(), ...droppedKeys.keys()];
  for (const a of byKey.values()) {
    for (const d of a.deps) {
      const up = byKey.get(d.assetKey);
      if (up) {
        const bad = checkDependencyMapping(a, d, up);
        if (bad) {
          ownProblem.add(a.key);
          problems.push(
            problem(bad.code, a, {
              field: `deps.${d.name}`,
              files: [a.file, up.file],
              message: `${where(a)}: field "deps.${d.name}": ${bad.message}`,
            }),
          );
        }
      } else if (!droppedKeys.has(d.assetKey)) {
        ownProblem.add(a.key);
        problems.push(
          problem("GRAPH_UNKNOWN_DEPENDENCY", a, {
            field: `deps.${d.name}`,
            message:
              `${where(a)}: field "deps.${d.name}": depends on "${d.assetKey}", which no definitions file defines` +
              `${didYouMean(
                d.assetKey,
                allKeys.filter((k) => k !== a.key),
              )}`,
          }),
        );
      }
    }
  }

  // 3. Cycles, as strongly connected components over the surviving keys.
  for (const component of stronglyConnected(byKey)) {
    for (const key of component) {
      const a = byKey.get(key)!;
      ownProblem.add(key);
      // The shortest cycle through this asset; its last edge is the dep of this asset that closes it.
      const path = cyclePath(key, component, byKey);
      const files = [...new Set(path.map((k) => byKey.get(k)!.file))];
      const pred = path[path.length - 2];
      const dep = pred === undefined ? undefined : a.deps.find((d) => d.assetKey === pred);
      const shown = path.map((k) => `"${k}" (${byKey.get(k)!.file})`).join(" → ");
      problems.push(
        problem("GRAPH_CYCLE", a, {
          files,
          ...(dep ? { field: `deps.${dep.name}` } : {}),
          message:
            `${where(a)}${dep ? `: field "deps.${dep.name}"` : ""}: dependency cycle ${shown} ` +
            `(each arrow points from an upstream asset to an asset that reads it); ` +
            `an asset cannot read its own output, so remove one of these dependencies`,
        }),
      );
    }
  }

  // 4. Everything downstream of a left-out asset is left out too, with the cause.
  const excluded = new Map<string, { root: SnapshotAsset; rootCode: GraphProblemCode }>();
  const rootCode = new Map<string, GraphProblemCode>();
  for (const p of problems) if (p.assetKey !== null && !rootCode.has(p.assetKey)) rootCode.set(p.assetKey, p.code);
  const dependents = new Map<string, SnapshotAsset[]>();
  for (const a of byKey.values()) {
    for (const d of a.deps) {
      const list = dependents.get(d.assetKey);
      if (list) list.push(a);
      else dependents.set(d.assetKey, [a]);
    }
  }
  const queue: string[] = [];
  for (const key of [...ownProblem, ...droppedKeys.keys()].sort(cmp)) {
    const root = byKey.get(key) ?? droppedKeys.get(key)!;
    excluded.set(key, { root, rootCode: rootCode.get(key) ?? "GRAPH_DUPLICATE_KEY" });
    queue.push(key);
  }
  for (let i = 0; i < queue.length; i++) {
    const upKey = queue[i]!;
    const cause = excluded.get(upKey)!;
    for (const down of dependents.get(upKey) ?? []) {
      if (excluded.has(down.key)) continue;
      excluded.set(down.key, cause);
      queue.push(down.key);
      const d = down.deps.find((x) => x.assetKey === upKey)!;
      const rootText =
        cause.root.key === upKey
          ? `${cause.rootCode} in ${cause.root.file}`
          : `${cause.rootCode} at asset "${cause.root.key}" in ${cause.root.file}`;
      problems.push(
        problem("GRAPH_UPSTREAM_EXCLUDED", down, {
          field: `deps.${d.name}`,
          files: [down.file, cause.root.file],
          message:
            `${where(down)}: field "deps.${d.name}": not loaded because the asset it depends on, "${upKey}", ` +
            `is excluded (${rootText}); fix that and this asset returns`,
        }),
      );
    }
  }

  // 5. Checks: attached to an asset that exists, one name per asset.
  const activeChecks: SnapshotCheck[] = [];
  for (const group of groupBy(checks, (c) => `${c.assetKey}\u0000${c.name}`)) {
    let kept: SnapshotCheck[] = group;
    if (group.length > 1) {
      const fresh = group.filter((c) => !fallbackFiles.has(c.file));
      kept = fresh.length === 1 ? fresh : [];
      const list = group.map((c) => `${c.file} (export ${c.exportName})`).join(" and ");
      for (const c of group) {
        if (kept.includes(c)) continue;
        problems.push(
          checkProblem("GRAPH_DUPLICATE_CHECK", c, {
            files: group.map((g) => g.file),
            message:
              `${c.file}: asset "${c.assetKey}": check "${c.name}" is defined more than once, in ${list}; ` +
              `check names must be unique per asset, so rename or remove one`,
          }),
        );
      }
    }
    for (const c of kept) {
      if (excluded.has(c.assetKey)) {
        const cause = excluded.get(c.assetKey)!;
        problems.push(
          checkProblem("GRAPH_UPSTREAM_EXCLUDED", c, {
            files: [c.file, cause.root.file],
            message:
              `${c.file}: asset "${c.assetKey}": check "${c.name}" is not loaded because the asset is excluded ` +
              `(${cause.rootCode} at asset "${cause.root.key}" in ${cause.root.file})`,
          }),
        );
      } else if (!byKey.has(c.assetKey)) {
        problems.push(
          checkProblem("GRAPH_UNKNOWN_CHECK_ASSET", c, {
            message:
              `${c.file}: asset "${c.assetKey}": check "${c.name}" is attached to this asset, which no definitions file defines` +
              didYouMean(c.assetKey, allKeys),
          }),
        );
      } else {
        const wrong = checkPartitionsProblem(c, byKey.get(c.assetKey)!);
        if (wrong)
          problems.push(
            checkProblem("GRAPH_CHECK_PARTITIONS_INVALID", c, { message: `${c.file}: asset "${c.assetKey}": check "${c.name}": ${wrong}` }),
          );
        else activeChecks.push(c);
      }
    }
  }

  return {
    problems: problems.sort(compareProblems),
    assets: [...byKey.values()].filter((a) => !excluded.has(a.key)),
    checks: activeChecks,
  };
}

function pickDuplicateWinner(
  group: readonly SnapshotAsset[],
  fallbackFiles: ReadonlySet<string>,
  previousFileOf: ReadonlyMap<string, string> | undefined,
): SnapshotAsset | undefined {
  // Where the key was loaded from before decides; a stand-in too, since the new definition may be the mistake.
  const previous = previousFileOf?.get(group[0]!.key);
  const inPrevious = group.filter((a) => a.file === previous);
  if (inPrevious.length === 1) return inPrevious[0];
  if (inPrevious.length > 1) return undefined;
  const fresh = group.filter((a) => !fallbackFiles.has(a.file));
  return fresh.length === 1 ? fresh[0] : undefined;
}

/**
 * Tarjan's algorithm, iterative (a chain of 20 000 assets must not overflow
 * the stack). Returns the components that form cycles, each sorted, in key order.
 */
function stronglyConnected(byKey: ReadonlyMap<string, SnapshotAsset>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const out: string[][] = [];
  let counter = 0;
  const edges = (k: string): string[] =>
    byKey
      .get(k)!
      .deps.map((d) => d.assetKey)
      .filter((u) => byKey.has(u));
  for (const start of [...byKey.keys()].sort(cmp)) {
    if (index.has(start)) continue;
    const work: { key: string; next: string[]; i: number }[] = [];
    const visit = (k: string): void => {
      index.set(k, counter);
      low.set(k, counter);
      counter++;
      stack.push(k);
      onStack.add(k);
      work.push({ key: k, next: edges(k), i: 0 });
    };
    visit(start);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      if (frame.i < frame.next.length) {
        const n = frame.next[frame.i++]!;
        if (!index.has(n)) visit(n);
        else if (onStack.has(n)) low.set(frame.key, Math.min(low.get(frame.key)!, index.get(n)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.key, Math.min(low.get(parent.key)!, low.get(frame.key)!));
      if (low.get(frame.key) === index.get(frame.key)) {
        const component: string[] = [];
        let k: string;
        do {
          k = stack.pop()!;
          onStack.delete(k);
          component.push(k);
        } while (k !== frame.key);
        const selfLoop = component.length === 1 && edges(component[0]!).includes(component[0]!);
        if (component.length > 1 || selfLoop) out.push(component.sort(cmp));
      }
    }
  }
  return out.sort((a, b) => cmp(a[0]!, b[0]!));
}

/**
 * A shortest cycle through `start` inside its component, in data-flow order
 * (upstream → downstream), closed: `[a, b, c, a]`.
 */
function cyclePath(start: string, component: readonly string[], byKey: ReadonlyMap<string, SnapshotAsset>): string[] {
  const inside = new Set(component);
  // Walk downstream: from k to every asset in the component that reads k.
  const readers = new Map<string, string[]>();
  for (const k of component) {
    for (const d of byKey.get(k)!.deps) {
      if (!inside.has(d.assetKey)) continue;
      const list = readers.get(d.assetKey);
      if (list) list.push(k);
      else readers.set(d.assetKey, [k]);
    }
  }
  const prev = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const k = queue[i]!;
    for (const r of (readers.get(k) ?? []).sort(cmp)) {
      if (r === start) {
        const path = [start];
        for (let at = k; at !== start; at = prev.get(at)!) path.splice(1, 0, at);
        path.push(start);
        return path;
      }
      if (prev.has(r)) continue;
      prev.set(r, k);
      queue.push(r);
    }
  }
  return [start, start];
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = keyOf(item);
    const list = groups.get(k);
    if (list) list.push(item);
    else groups.set(k, [item]);
  }
  return [...groups.values()];
}

function where(a: SnapshotAsset): string {
  return `${a.file}: asset "${a.key}"`;
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

function problem(
  code: GraphProblemCode,
  a: SnapshotAsset,
  p: { message: string; field?: string; files?: readonly string[] },
): GraphProblem {
  return {
    code,
    message: p.message,
    file: a.file,
    files: [...new Set(p.files ?? [a.file])].sort(cmp),
    assetKey: a.key,
    exportName: a.exportName,
    checkName: null,
    field: p.field ?? null,
  };
}

/** What is wrong with a check's `partitions` for its asset, if anything. */
function checkPartitionsProblem(c: SnapshotCheck, asset: SnapshotAsset): string | undefined {
  const p = c.partitions;
  if (!p) return undefined;
  if (!asset.partitions) return "partitions are given, but the asset is not partitioned; leave partitions out";
  if ("keys" in p) {
    if (asset.partitions.kind === "dynamic") return undefined; // keys come and go at run time
    let space;
    try {
      space = partitionSpace(asset.partitions);
    } catch {
      return undefined; // a multi-partition with a dynamic dimension: keys are known at run time only
    }
    const unknown = p.keys.filter((k) => !space.has(k));
    return unknown.length === 0
      ? undefined
      : `partitions ${unknown
          .slice(0, 5)
          .map((k) => JSON.stringify(k))
          .join(", ")} are not partitions of the asset`;
  }
  if (asset.partitions.kind !== "time") return "a partitions range (from/to) needs a time-partitioned asset; list the keys instead";
  const space = partitionSpace(asset.partitions);
  const bad = [p.from, p.to].filter((k): k is string => k !== null && !space.has(k));
  if (bad.length > 0)
    return `${bad.map((k) => JSON.stringify(k)).join(" and ")} ${bad.length > 1 ? "are not partition keys" : "is not a partition key"} of the asset`;
  if (p.from !== null && p.to !== null && p.from > p.to) return `the range ends (${p.to}) before it starts (${p.from})`;
  return undefined;
}

function checkProblem(code: GraphProblemCode, c: SnapshotCheck, p: { message: string; files?: readonly string[] }): GraphProblem {
  return {
    code,
    message: p.message,
    file: c.file,
    files: [...new Set(p.files ?? [c.file])].sort(cmp),
    assetKey: c.assetKey,
    exportName: c.exportName,
    checkName: c.name,
    field: null,
  };
}
