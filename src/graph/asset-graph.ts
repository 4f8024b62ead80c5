import { GraphError } from "../errors/index.js";
import type { DepSpec } from "../sdk/index.js";
import { cmp } from "./graph-problem.js";
import type { DefinitionsSnapshot, SnapshotAsset, SnapshotCheck } from "./snapshot.js";
import { didYouMean, suggestKey } from "./suggest-key.js";

/** An edge seen from the upstream side: `downstreamKey` reads this asset through `dep`. */
export interface DownstreamEdge {
  readonly downstreamKey: string;
  readonly dep: DepSpec;
}

export interface ExpandOptions {
  /** How many dependency levels to follow; default: all. */
  readonly depth?: number;
}

/**
 * The asset graph of one definitions snapshot: lookups by key, edges both
 * ways, transitive closures, a deterministic topological order and asset
 * selection. Immutable and pure; build it once per snapshot version.
 *
 * Edges to keys that are not in the graph are ignored (a validated snapshot
 * has none).
 * @example
 * // given snapshot: DefinitionsSnapshot
 * const graph = AssetGraph.fromSnapshot(snapshot);
 * graph.select("+sales/revenue_7d"); // revenue_7d and everything it reads, upstream first
 */
export class AssetGraph {
  /** Every asset, sorted by key. */
  readonly assets: readonly SnapshotAsset[];
  /** Every check, sorted by asset key then name. */
  readonly checks: readonly SnapshotCheck[];
  private readonly byKey = new Map<string, SnapshotAsset>();
  private readonly up = new Map<string, string[]>();
  private readonly down = new Map<string, DownstreamEdge[]>();
  private readonly checksByAsset = new Map<string, SnapshotCheck[]>();
  private levels: Map<string, number> | undefined;

  constructor(assets: readonly SnapshotAsset[], checks: readonly SnapshotCheck[] = []) {
    for (const a of assets) {
      const other = this.byKey.get(a.key);
      if (other) {
        throw new GraphError(
          "GRAPH_DUPLICATE_KEY",
          `asset "${a.key}" is defined twice: in ${other.file} (export ${other.exportName}) and in ${a.file} (export ${a.exportName}); ` +
            `build the graph from a validated snapshot (buildSnapshot) or give one of them another key`,
          { location: { file: a.file, assetKey: a.key } },
        );
      }
      this.byKey.set(a.key, a);
    }
    this.assets = [...assets].sort((a, b) => cmp(a.key, b.key));
    for (const a of this.assets) {
      this.up.set(a.key, []);
      this.down.set(a.key, []);
    }
    for (const a of this.assets) {
      for (const d of a.deps) {
        if (!this.byKey.has(d.assetKey)) continue;
        this.up.get(a.key)!.push(d.assetKey);
        this.down.get(d.assetKey)!.push({ downstreamKey: a.key, dep: d });
      }
    }
    for (const list of this.up.values()) list.sort(cmp);
    for (const list of this.down.values()) list.sort((x, y) => cmp(x.downstreamKey, y.downstreamKey));
    this.checks = [...checks].sort((a, b) => cmp(a.assetKey, b.assetKey) || cmp(a.name, b.name));
    for (const c of this.checks) {
      const list = this.checksByAsset.get(c.assetKey);
      if (list) list.push(c);
      else this.checksByAsset.set(c.assetKey, [c]);
    }
  }

  static fromSnapshot(snapshot: DefinitionsSnapshot): AssetGraph {
    return new AssetGraph(snapshot.assets, snapshot.checks);
  }

  get size(): number {
    return this.assets.length;
  }

  /** Every key, sorted. */
  keys(): string[] {
    return this.assets.map((a) => a.key);
  }

  has(key: string): boolean {
    return this.byKey.has(key);
  }

  get(key: string): SnapshotAsset | undefined {
    return this.byKey.get(key);
  }

  /** The asset, or a GraphError `GRAPH_UNKNOWN_ASSET` suggesting the nearest key. */
  require(key: string): SnapshotAsset {
    const a = this.byKey.get(key);
    if (!a) {
      throw new GraphError("GRAPH_UNKNOWN_ASSET", `no asset has the key "${key}"${didYouMean(key, this.byKey.keys())}`, {
        location: { assetKey: key },
      });
    }
    return a;
  }

  /** The nearest existing key to a mistyped one, if any is close. */
  suggest(key: string): string | undefined {
    return suggestKey(key, this.byKey.keys());
  }

  /** Keys this asset reads directly, sorted. */
  upstreamKeys(key: string): readonly string[] {
    return this.up.get(key) ?? [];
  }

  /** Keys that read this asset directly, sorted. */
  downstreamKeys(key: string): string[] {
    return (this.down.get(key) ?? []).map((e) => e.downstreamKey);
  }

  /** The assets this asset reads directly. */
  upstreamOf(key: string): SnapshotAsset[] {
    return this.upstreamKeys(key).map((k) => this.byKey.get(k)!);
  }

  /** The assets that read this asset directly. */
  downstreamOf(key: string): SnapshotAsset[] {
    return this.downstreamKeys(key).map((k) => this.byKey.get(k)!);
  }

  /** The edges out of this asset, each with the dependency (and its mapping) as the downstream declared it. */
  downstreamEdges(key: string): readonly DownstreamEdge[] {
    return this.down.get(key) ?? [];
  }

  checksFor(key: string): readonly SnapshotCheck[] {
    return this.checksByAsset.get(key) ?? [];
  }

  /** Every key the given assets read, directly or transitively (not the seeds themselves unless on a cycle). */
  ancestors(keys: string | Iterable<string>, options: ExpandOptions = {}): Set<string> {
    return this.walk(keys, options.depth, (k) => this.up.get(k) ?? []);
  }

  /** Every key that reads the given assets, directly or transitively. */
  descendants(keys: string | Iterable<string>, options: ExpandOptions = {}): Set<string> {
    return this.walk(keys, options.depth, (k) => this.downstreamKeys(k));
  }

  /**
   * Keys in dependency order (every asset after everything it reads), ties
   * broken by key so the order is the same on every run. Without `keys`, the
   * whole graph; with, those keys in the order the whole graph gives them.
   */
  topologicalOrder(keys?: Iterable<string>): string[] {
    const levels = this.computeLevels();
    const wanted = keys === undefined ? this.keys() : [...new Set(keys)];
    for (const k of wanted) this.require(k);
    return wanted.sort((a, b) => levels.get(a)! - levels.get(b)! || cmp(a, b));
  }

  /** Group name → keys in it, both sorted. */
  groups(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const a of this.assets) {
      const list = out.get(a.group);
      if (list) list.push(a.key);
      else out.set(a.group, [a.key]);
    }
    return new Map([...out].sort(([a], [b]) => cmp(a, b)));
  }

  /**
   * Resolves an asset selection to keys in topological order. Items are
   * separated by commas or spaces; each is a key, a glob (`sales/*`), `*`, or
   * `group:NAME`, optionally with `+` before (add everything it reads) and/or
   * after (add everything that reads it); a number limits the levels
   * (`1+sales/orders+2`). Throws GraphError on an unknown key or an item that
   * matches nothing.
   * @example
   * // given graph: AssetGraph
   * graph.select("+sales/revenue_7d group:finance")
   */
  select(selection: string | readonly string[]): string[] {
    const items = (typeof selection === "string" ? [selection] : selection).flatMap((s) => s.split(/[\s,]+/)).filter((s) => s !== "");
    const picked = new Set<string>();
    for (const item of items) {
      for (const k of this.selectItem(item)) picked.add(k);
    }
    return this.topologicalOrder(picked);
  }

  private selectItem(item: string): Set<string> {
    const m = /^(?:(\d*)\+)?([^+]+?)(?:\+(\d*))?$/.exec(item);
    if (!m?.[2]) {
      throw new GraphError("GRAPH_BAD_SELECTION", `selection "${item}": expected [N+]KEY[+N], a glob such as sales/* or group:NAME`);
    }
    const [, upDepth, body, downDepth] = m as unknown as [string, string | undefined, string, string | undefined];
    let base: string[];
    if (body.startsWith("group:")) {
      const name = body.slice("group:".length);
      base = this.groups().get(name) ?? [];
      if (base.length === 0) {
        throw new GraphError(
          "GRAPH_BAD_SELECTION",
          `selection "${item}": no asset is in group "${name}"${didYouMean(name, this.groups().keys())}`,
        );
      }
    } else if (body.includes("*")) {
      const re = new RegExp(`^${body.split("*").map(escapeRegExp).join(".*")}$`);
      base = this.keys().filter((k) => re.test(k));
      if (base.length === 0) throw new GraphError("GRAPH_BAD_SELECTION", `selection "${item}": no asset key matches "${body}"`);
    } else {
      base = [this.require(body).key];
    }
    const out = new Set(base);
    const depth = (s: string | undefined): ExpandOptions => (s ? { depth: Number(s) } : {});
    if (upDepth !== undefined) for (const k of this.ancestors(base, depth(upDepth))) out.add(k);
    if (downDepth !== undefined) for (const k of this.descendants(base, depth(downDepth))) out.add(k);
    return out;
  }

  private walk(seeds: string | Iterable<string>, depth: number | undefined, next: (k: string) => readonly string[]): Set<string> {
    const out = new Set<string>();
    let frontier = typeof seeds === "string" ? [seeds] : [...seeds];
    for (let level = 0; frontier.length > 0 && (depth === undefined || level < depth); level++) {
      const nextFrontier: string[] = [];
      for (const k of frontier) {
        for (const n of next(k)) {
          if (out.has(n)) continue;
          out.add(n);
          nextFrontier.push(n);
        }
      }
      frontier = nextFrontier;
    }
    return out;
  }

  /** Longest path from a root, per key (Kahn's algorithm). */
  private computeLevels(): Map<string, number> {
    if (this.levels) return this.levels;
    const indegree = new Map<string, number>();
    for (const a of this.assets) indegree.set(a.key, this.up.get(a.key)!.length);
    const levels = new Map<string, number>();
    const queue: string[] = [];
    for (const [k, n] of indegree) {
      if (n === 0) {
        queue.push(k);
        levels.set(k, 0);
      }
    }
    for (let i = 0; i < queue.length; i++) {
      const k = queue[i]!;
      const level = levels.get(k)!;
      for (const { downstreamKey } of this.down.get(k)!) {
        levels.set(downstreamKey, Math.max(levels.get(downstreamKey) ?? 0, level + 1));
        const left = indegree.get(downstreamKey)! - 1;
        indegree.set(downstreamKey, left);
        if (left === 0) queue.push(downstreamKey);
      }
    }
    if (queue.length !== this.assets.length) {
      const stuck = this.assets.filter((a) => indegree.get(a.key)! > 0).map((a) => a.key);
      throw new GraphError(
        "GRAPH_CYCLE",
        `the graph has a dependency cycle among ${stuck
          .slice(0, 10)
          .map((k) => `"${k}"`)
          .join(", ")}; ` + `build the graph from a validated snapshot (buildSnapshot), which excludes cycles`,
      );
    }
    this.levels = levels;
    return levels;
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
}
