import type { DefinitionsSnapshot } from "../graph/index.js";
import { AssetGraph } from "../graph/index.js";

/** What the API reads about definitions; the storage DefinitionStore provides it. */
export interface DefinitionsSource {
  latestSnapshot(): Promise<{ version: number; contentHash: string; graph: unknown; createdAt: Date } | undefined>;
  listDynamicPartitions(name: string): Promise<string[]>;
}

export interface CatalogView {
  readonly version: number;
  readonly contentHash: string;
  readonly loadedAt: Date;
  readonly graph: AssetGraph;
}

/**
 * The current asset graph, rebuilt only when the stored snapshot version
 * changes, so a request costs one small query rather than a graph rebuild.
 */
export class Catalog {
  private cached: CatalogView | undefined;
  private readonly empty: CatalogView;
  private ready: Promise<void> = Promise.resolve();

  constructor(private readonly source: DefinitionsSource) {
    this.empty = { version: 0, contentHash: "", loadedAt: new Date(0), graph: AssetGraph.fromSnapshot({ assets: [], checks: [] }) };
  }

  /**
   * Requests wait for this before answering (e.g. the first definitions load of
   * `tributary dev`), so an early client never sees a misleadingly empty graph.
   */
  waitFor(ready: Promise<unknown>): void {
    this.ready = ready.then(
      () => undefined,
      () => undefined,
    );
  }

  async current(): Promise<CatalogView> {
    await this.ready;
    const latest = await this.source.latestSnapshot();
    if (!latest) return this.empty;
    if (this.cached?.version === latest.version) return this.cached;
    const snapshot = latest.graph as DefinitionsSnapshot;
    this.cached = {
      version: latest.version,
      contentHash: latest.contentHash,
      loadedAt: latest.createdAt,
      graph: AssetGraph.fromSnapshot(snapshot),
    };
    return this.cached;
  }

  dynamicKeys(name: string): Promise<string[]> {
    return this.source.listDynamicPartitions(name);
  }
}
