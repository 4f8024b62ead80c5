import { AssetGraph, type DefinitionsSnapshot } from "../graph/index.js";
import type { DefinitionStore } from "./definition-store.js";

export interface CurrentGraph {
  readonly version: number;
  readonly graph: AssetGraph;
  readonly loadedAt: Date;
}

const EMPTY: CurrentGraph = { version: 0, graph: new AssetGraph([], []), loadedAt: new Date(0) };
/** Earlier versions kept at once (the runs in flight rarely span more). */
const KEPT_VERSIONS = 8;

/**
 * The latest definitions snapshot as an AssetGraph, re-read only when its
 * version changes: a check costs one tiny query, and at most one check runs
 * per `maxAgeMs` unless a caller asks for a fresh one.
 */
export class GraphCache {
  #cached: CurrentGraph = EMPTY;
  #checkedAt = 0;
  #inflight: Promise<CurrentGraph> | undefined;
  /** Graphs of given versions, most recently used last. */
  readonly #versions = new Map<number, Promise<AssetGraph | undefined>>();

  constructor(
    private readonly store: Pick<DefinitionStore, "latestVersion" | "getSnapshot">,
    private readonly maxAgeMs = 1_000,
  ) {}

  async current(options: { fresh?: boolean } = {}): Promise<CurrentGraph> {
    if (!options.fresh && Date.now() - this.#checkedAt < this.maxAgeMs) return this.#cached;
    this.#inflight ??= this.#refresh().finally(() => (this.#inflight = undefined));
    return this.#inflight;
  }

  /**
   * The graph of one version (snapshots never change once stored), for what a run was planned with; undefined
   * for a version that was never stored.
   */
  async atVersion(version: number): Promise<AssetGraph | undefined> {
    if (version === this.#cached.version) return this.#cached.graph;
    let graph = this.#versions.get(version);
    if (graph) this.#versions.delete(version);
    else {
      graph = this.store
        .getSnapshot(version)
        .then((s) => (s ? AssetGraph.fromSnapshot(s.graph as unknown as DefinitionsSnapshot) : undefined));
      // A failed read is not remembered.
      graph.catch(() => this.#versions.delete(version));
    }
    this.#versions.set(version, graph);
    for (const old of this.#versions.keys()) {
      if (this.#versions.size <= KEPT_VERSIONS) break;
      this.#versions.delete(old);
    }
    return graph;
  }

  async #refresh(): Promise<CurrentGraph> {
    const checkedAt = Date.now();
    const version = await this.store.latestVersion();
    // Marked checked only once the cache holds that version: a caller in between (while the snapshot loads)
    // joins this refresh instead of taking the previous graph (at start, an empty one) as current.
    if (version === undefined) this.#cached = EMPTY;
    else if (version !== this.#cached.version) {
      const snapshot = await this.store.getSnapshot(version);
      if (snapshot) {
        this.#cached = {
          version,
          graph: AssetGraph.fromSnapshot(snapshot.graph as unknown as DefinitionsSnapshot),
          loadedAt: snapshot.createdAt,
        };
      }
    }
    this.#checkedAt = checkedAt;
    return this.#cached;
  }
}
