import type { AssetGraph } from "../graph/index.js";
import type { DefinitionStore, GraphCache } from "../storage/index.js";
import type { ReadinessProblem } from "./metrics/observability-routes.js";

export interface CatalogView {
  readonly version: number;
  readonly loadedAt: Date;
  readonly graph: AssetGraph;
}

/** How far the definitions this process serves have got: see Catalog.status. */
export type DefinitionsLoadState = "LOADING" | "LOADED" | "FAILED";

export interface DefinitionsStatus {
  readonly state: DefinitionsLoadState;
  /** When the definitions in force were loaded (by this process's loader, else when their version was stored). */
  readonly loadedAt: Date | null;
  /** The stored snapshot version the API answers with; null before any is stored. */
  readonly version: number | null;
  /** Why the load failed (FAILED), or what the API waits for (LOADING). */
  readonly message: string | null;
}

/**
 * The current asset graph for API requests: rebuilt only when the stored
 * snapshot version changes, so a request costs one tiny query at most.
 */
export class Catalog {
  private ready: Promise<void> = Promise.resolve();
  /** With a loader in this process (waitFor), its progress; without one, the stored snapshot decides. */
  #load: { state: DefinitionsLoadState; error?: string } | undefined;
  #loadedAt: Date | undefined;

  /** Shares the process's GraphCache, so the API and the loops read one copy of the graph. */
  constructor(
    private readonly cache: GraphCache,
    private readonly definitions: Pick<DefinitionStore, "listDynamicPartitions">,
  ) {}

  /**
   * The first definitions load of this process (`tributary dev`): until it is stored, status() says LOADING (FAILED
   * when it rejects). Requests answer meanwhile with the definitions an earlier load stored, as they do while a
   * changed file reloads; with none stored, they wait for it, so an early client never sees a misleadingly empty
   * graph.
   */
  waitFor(ready: Promise<unknown>): void {
    this.#load = { state: "LOADING" };
    this.ready = ready.then(
      async () => {
        // Another reader (the reconciler's first pass) may have cached the empty graph of before the load.
        await this.cache.current({ fresh: true });
        this.#loadedAt ??= new Date();
        this.#load = { state: "LOADED" };
      },
      (err: unknown) => {
        this.#load = { state: "FAILED", error: err instanceof Error ? err.message : String(err) };
      },
    );
  }

  /** Notes that this process's loader has just stored a (re)load, for status().loadedAt. */
  loaded(at: Date = new Date()): void {
    this.#loadedAt = at;
  }

  async status(): Promise<DefinitionsStatus> {
    if (this.#load?.state === "LOADING") {
      const stored = await this.cache.current();
      return stored.version === 0
        ? { state: "LOADING", loadedAt: null, version: null, message: "the definitions files are being imported for the first time" }
        : {
            state: "LOADING",
            loadedAt: stored.loadedAt,
            version: stored.version,
            message: `the definitions files are being imported; meanwhile the API answers with the definitions stored before (version ${stored.version})`,
          };
    }
    const view = await this.cache.current();
    const version = view.version === 0 ? null : view.version;
    if (this.#load?.state === "FAILED") {
      return {
        state: "FAILED",
        loadedAt: null,
        version,
        message: `the definitions could not be loaded: ${this.#load.error ?? "unknown error"}`,
      };
    }
    if (!this.#load && version === null) {
      // A server without a loader (`tributary api`) serves what a `tributary dev`, `reconciler` or `check` stored.
      return {
        state: "LOADING",
        loadedAt: null,
        version: null,
        message: "no definitions are stored in this database yet: a `tributary reconciler` (or `dev`) loads and stores them",
      };
    }
    return { state: "LOADED", loadedAt: this.#loadedAt ?? view.loadedAt, version, message: null };
  }

  async current(): Promise<CatalogView> {
    if (this.#load?.state === "LOADING") {
      const stored = await this.cache.current();
      if (stored.version > 0) return stored;
    }
    await this.ready;
    return this.cache.current();
  }

  dynamicKeys(name: string): Promise<string[]> {
    return this.definitions.listDynamicPartitions(name);
  }
}

/** `/readyz`'s view of the definitions: not ready while the first load runs, or when it failed. */
export async function definitionsReadiness(catalog: Catalog | undefined): Promise<ReadinessProblem[]> {
  if (!catalog) return [];
  const status = await catalog.status();
  if (status.state === "LOADED") return [];
  return [{ code: status.state === "LOADING" ? "DEFINITIONS_LOADING" : "DEFINITIONS_FAILED", message: status.message ?? status.state }];
}
