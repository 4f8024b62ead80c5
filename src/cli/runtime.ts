import path from "node:path";
import { addDynamicPartitions, Catalog, clearPartitions, launchRun, reportAssetEvent, type ApiContext, type DefinitionFileView } from "../api/index.js";
import {
  GraphCache,
  LocalDirOutputStore,
  migrate,
  openDatabase,
  PgDefinitionStore,
  PgEventStore,
  PgRunStore,
  type DatabaseHandle,
  type OutputStore,
} from "../storage/index.js";
import type { Settings } from "./settings.js";

/** The pieces every in-process command shares: the database, its stores, the catalog. */
export interface Runtime {
  readonly settings: Settings;
  readonly database: DatabaseHandle;
  readonly definitions: PgDefinitionStore;
  readonly runs: PgRunStore;
  readonly graphs: GraphCache;
  readonly catalog: Catalog;
  /** Outputs over the inline limit; null when not configured (Postgres mode without TRIBUTARY_OUTPUT_DIR). */
  readonly outputStore: OutputStore | null;
  readonly logsDir: string;
  apiContext(): ApiContext;
  close(): Promise<void>;
}

/** Where the embedded database lives inside the data directory. */
export const embeddedDbDir = (settings: Settings): string => path.join(settings.dataDir, "db");

/** Opens (and migrates) the metadata database the settings name: Postgres with DATABASE_URL, else PGlite. */
export async function openRuntime(settings: Settings): Promise<Runtime> {
  const database = await openDatabase(
    settings.databaseUrl
      ? { kind: "postgres", url: settings.databaseUrl, applicationName: "tributary" }
      : { kind: "pglite", dataDir: embeddedDbDir(settings) },
  );
  try {
    await migrate(database.db);
  } catch (err) {
    await database.close();
    throw err;
  }
  const definitions = new PgDefinitionStore(database.db);
  const runs = new PgRunStore(database.db);
  const graphs = new GraphCache(definitions);
  const catalog = new Catalog(graphs, definitions);
  // Embedded mode keeps large outputs in the data directory; with Postgres they need a configured store.
  const outputDir = settings.outputDir ?? (settings.databaseUrl ? undefined : path.join(settings.dataDir, "outputs"));
  const outputStore = outputDir ? new LocalDirOutputStore(outputDir) : null;
  return {
    settings,
    database,
    definitions,
    runs,
    graphs,
    catalog,
    outputStore,
    logsDir: settings.logsDir ?? path.join(settings.dataDir, "logs"),
    apiContext: () => ({
      catalog,
      runs,
      now: () => new Date(),
      launchRun: (request) => launchRun({ graphs, runs, definitions }, request, new Date()),
      clearPartitions: (request) => clearPartitions({ graphs, runs, definitions }, request, new Date()),
      addDynamicPartitions: (request) => addDynamicPartitions({ graphs, definitions }, request),
      reportAssetEvent: (request) => reportAssetEvent({ graphs, events: new PgEventStore(database.db), definitions }, request, new Date()),
      definitionFiles: async (): Promise<DefinitionFileView[]> =>
        (await definitions.listFiles()).map((f) => ({
          path: f.path,
          status: f.status,
          error: f.error as DefinitionFileView["error"],
          warnings: f.warnings,
          problems: f.problems as DefinitionFileView["problems"],
          loadMs: f.loadMs,
          loadedAt: f.loadedAt,
        })),
    }),
    close: () => database.close(),
  };
}
