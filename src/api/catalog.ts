import type { AssetGraph } from "../graph/index.js";
import type { DefinitionStore, GraphCache } from "../storage/index.js";

export interface CatalogView {
  readonly version: number;
  readonly loadedAt: Date;
  readonly graph: AssetGraph;
}

/**
 * The current asset graph for API requests: rebuilt only when the stored
 * snapshot version changes, so a request costs one tiny query at most.
 */
export class Catalog {
  private ready: Promise<void> = Promise.resolve();

  /** Shares the process's GraphCache, so the API and the loops read one copy of the graph. */
  constructor(
    private readonly cache: GraphCache,
    private readonly definitions: Pick<DefinitionStore, "listDynamicPartitions">,
  ) {}

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
    return this.cache.current();
  }

  dynamicKeys(name: string): Promise<string[]> {
    return this.definitions.listDynamicPartitions(name);
  }
}
