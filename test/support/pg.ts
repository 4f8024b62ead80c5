// Postgres for test files: a fresh clone of the migrated template per file.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Kysely } from "kysely";
import { afterAll, beforeAll, describe, inject } from "vitest";
import {
  createDatabase,
  databaseUrlWithName,
  dropDatabase,
  openPostgres,
  type Database,
  type PostgresHandle,
} from "../../src/storage/index.js";
import type { PostgresContext } from "./provided-context.js";
import { newTestDatabaseName } from "./test-database-names.js";

export interface TestDatabase {
  /** Connection URL of this file's database. */
  readonly url: string;
  readonly name: string;
  readonly handle: PostgresHandle;
  readonly db: Kysely<Database>;
  /** Closes the handle early (afterAll also does, then drops the database). */
  close(): Promise<void>;
}

function postgresContext(): Extract<PostgresContext, { available: true }> {
  const context = inject("postgres");
  if (!context.available) {
    throw new Error(`Postgres is unavailable (${context.reason}): wrap this suite in describePostgres()`);
  }
  return context;
}

/** Like describe(), but skipped with a visible reason when Postgres is absent outside CI. */
export function describePostgres(name: string, fn: () => void): void {
  const context = inject("postgres");
  // skipIf, not a committed describe.skip: the suite runs whenever Postgres is there.
  describe.skipIf(!context.available)(context.available ? name : `${name} [SKIPPED: ${context.reason}]`, fn);
}

/**
 * In beforeAll clones the migrated template (`CREATE DATABASE … TEMPLATE …`,
 * tens of milliseconds) and opens it; in afterAll closes and drops it.
 * The returned object's fields are valid from beforeAll on.
 */
export function useTestDatabase(): TestDatabase {
  let state: { url: string; name: string; handle: PostgresHandle } | undefined;
  const current = () => {
    if (!state) throw new Error("useTestDatabase(): the database exists only from beforeAll to afterAll");
    return state;
  };

  beforeAll(async () => {
    const { adminUrl, templateDatabase } = postgresContext();
    const name = newTestDatabaseName();
    await createDatabase(adminUrl, name, { template: templateDatabase });
    const url = databaseUrlWithName(adminUrl, name);
    state = { url, name, handle: await openPostgres({ kind: "postgres", url }) };
  });

  afterAll(async () => {
    if (!state) return;
    const { name, handle } = state;
    state = undefined;
    await handle.close();
    await dropDatabase(postgresContext().adminUrl, name);
  });

  return {
    get url() {
      return current().url;
    },
    get name() {
      return current().name;
    },
    get handle() {
      return current().handle;
    },
    get db() {
      return current().handle.db;
    },
    close: () => current().handle.close(),
  };
}

/** An empty (unmigrated) scratch database; `drop()` removes it. */
export async function createScratchDatabase(): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const { adminUrl } = postgresContext();
  const name = newTestDatabaseName();
  await createDatabase(adminUrl, name);
  return { url: databaseUrlWithName(adminUrl, name), name, drop: () => dropDatabase(adminUrl, name) };
}

export interface CommandStore {
  /** A new empty directory for `--data-dir`: the commands' logs and local files, never a database. */
  readonly dataDir: string;
  /** This store's own database, a clone of the migrated template. */
  readonly databaseUrl: string;
  /**
   * What a command's environment needs to use it: `DATABASE_URL`, and `TRIBUTARY_OUTPUT_DIR` in the data directory,
   * where the embedded database would keep outputs too.
   */
  readonly env: { DATABASE_URL: string; TRIBUTARY_OUTPUT_DIR: string };
  remove(): Promise<void>;
}

/**
 * Where CLI commands that work in-process keep their state when the embedded database is not what a test is about: a
 * Postgres database cloned from the migrated template, and a new data directory for the rest. Each command then
 * connects instead of starting the embedded database (two thirds of a short command's CPU). `remove()` drops both.
 */
export async function commandStore(prefix = "tributary-cli-"): Promise<CommandStore> {
  const { adminUrl, templateDatabase } = postgresContext();
  const name = newTestDatabaseName();
  await createDatabase(adminUrl, name, { template: templateDatabase });
  const databaseUrl = databaseUrlWithName(adminUrl, name);
  const dataDir = await mkdtemp(path.join(tmpdir(), prefix));
  return {
    dataDir,
    databaseUrl,
    env: { DATABASE_URL: databaseUrl, TRIBUTARY_OUTPUT_DIR: path.join(dataDir, "outputs") },
    remove: async () => {
      await rm(dataDir, { recursive: true, force: true });
      await dropDatabase(adminUrl, name);
    },
  };
}

/**
 * A commandStore() for a describe block: made in beforeAll, removed in afterAll. The returned object's fields are
 * valid from beforeAll on.
 */
export function useCommandStore(prefix?: string): CommandStore {
  let store: CommandStore | undefined;
  const current = () => {
    if (!store) throw new Error("useCommandStore(): the store exists only from beforeAll to afterAll");
    return store;
  };
  beforeAll(async () => {
    store = await commandStore(prefix);
  });
  afterAll(async () => {
    const made = store;
    store = undefined;
    await made?.remove();
  });
  return {
    get dataDir() {
      return current().dataDir;
    },
    get databaseUrl() {
      return current().databaseUrl;
    },
    get env() {
      return current().env;
    },
    remove: () => current().remove(),
  };
}
