import path from "node:path";
import { Catalog, type ApiContext, type DefinitionFileView } from "../api/index.js";
import { migrate, openDatabase, PgDefinitionStore, type DatabaseHandle, type DefinitionStore } from "../storage/index.js";
import type { Settings } from "./settings.js";

/** The pieces every in-process command shares: the database, its stores, the catalog. */
export interface Runtime {
  readonly database: DatabaseHandle;
  readonly definitions: DefinitionStore;
  readonly catalog: Catalog;
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
  const catalog = new Catalog(definitions);
  return {
    database,
    definitions,
    catalog,
    apiContext: () => ({
      catalog,
      now: () => new Date(),
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
