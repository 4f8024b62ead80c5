// vitest globalSetup: checks Postgres and Redis once per run, builds the
// migrated template database that test files clone, and provides the results.
// Also makes sure of the migrated embedded database that suites copy into the
// data directories of the commands they run: built here once, not by the
// first two suites that want it at the same moment.
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import type { TestProject } from "vitest/node";
import {
  createDatabase,
  databaseUrlWithName,
  dropDatabase,
  migrate,
  migrationsHash,
  openPostgres,
  readMigrationFiles,
  redactDatabaseUrl,
  withAdminClient,
} from "../../src/storage/index.js";
import { ensureDataDirTemplate } from "./data-dir-template.js";
import { isCi, testDatabaseUrl, testRedisUrl } from "./env.js";
import type { PostgresContext, RedisContext } from "./provided-context.js";
import { STALE_TEST_DATABASE_MS, testDatabaseCreatedAt } from "./test-database-names.js";

export default async function setup(project: TestProject): Promise<void> {
  const [postgres, redis] = await Promise.all([preparePostgres(), checkRedis(), ensureDataDirTemplate()]);
  project.provide("postgres", postgres);
  project.provide("redis", redis);
}

async function preparePostgres(): Promise<PostgresContext> {
  const adminUrl = testDatabaseUrl();
  try {
    await withAdminClient(adminUrl, (client) => client.query("select 1"));
  } catch (error) {
    return unavailable("Postgres", adminUrl, error, "DATABASE_URL");
  }
  await dropStaleTestDatabases(adminUrl);
  return { available: true, adminUrl, templateDatabase: await ensureTemplate(adminUrl) };
}

/**
 * `tributary_tpl_<hash of migrations>`: built under a temporary name and
 * renamed when complete, so an existing template is always a complete one
 * and concurrent test runs never clone a half-migrated database.
 */
async function ensureTemplate(adminUrl: string): Promise<string> {
  const hash = migrationsHash(await readMigrationFiles()).slice(0, 8);
  const template = `tributary_tpl_${hash}`;
  if (await databaseExists(adminUrl, template)) return template;

  const building = `${template}_build_${Math.floor(Date.now() / 1000)}_${randomBytes(3).toString("hex")}`;
  await createDatabase(adminUrl, building);
  try {
    const handle = await openPostgres({ kind: "postgres", url: databaseUrlWithName(adminUrl, building) });
    try {
      await migrate(handle.db);
    } finally {
      await handle.close();
    }
    await renameDatabase(adminUrl, building, template);
  } finally {
    await dropDatabase(adminUrl, building);
  }
  return template;
}

async function renameDatabase(adminUrl: string, from: string, to: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await withAdminClient(adminUrl, (client) => client.query(`ALTER DATABASE "${from}" RENAME TO "${to}"`));
      return;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === "42P04") return; // another run finished the same template first
      // 55006: our just-closed connections are still leaving the server.
      if (code !== "55006" || attempt >= 20) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

async function databaseExists(adminUrl: string, name: string): Promise<boolean> {
  const result = await withAdminClient(adminUrl, (client) => client.query("select 1 from pg_database where datname = $1", [name]));
  return (result.rowCount ?? 0) > 0;
}

/** Test databases left behind by killed runs (their names carry a creation time). */
async function dropStaleTestDatabases(adminUrl: string): Promise<void> {
  const { rows } = await withAdminClient(adminUrl, (client) =>
    client.query<{ datname: string }>(
      "select datname from pg_database where datname like 't\\_%' or datname like 'tributary\\_tpl\\_%\\_build\\_%'",
    ),
  );
  const now = Date.now();
  for (const { datname } of rows) {
    const createdAt = testDatabaseCreatedAt(datname);
    if (createdAt !== undefined && now - createdAt > STALE_TEST_DATABASE_MS) {
      await dropDatabase(adminUrl, datname).catch(() => undefined);
    }
  }
}

async function checkRedis(): Promise<RedisContext> {
  const url = testRedisUrl();
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 2000,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  redis.on("error", () => undefined);
  try {
    await redis.connect();
    const pong = await redis.ping();
    if (pong !== "PONG") throw new Error(`PING answered ${pong}`);
    return { available: true, url };
  } catch (error) {
    return unavailable("Redis", url, error, "REDIS_URL");
  } finally {
    redis.disconnect();
  }
}

function unavailable(service: string, url: string, error: unknown, envName: string): { available: false; reason: string } {
  // Prefer the driver's own words over our wrapper's (which repeats the URL).
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  const reason = `${service} is not reachable at ${redactDatabaseUrl(url)} (${message(cause)})`;
  if (isCi()) throw new Error(`${reason}. CI=true: tests that need ${service} must run. Set ${envName}.`);
  const bar = "!".repeat(78);
  console.warn(`\n${bar}\n!! ${reason}\n!! Suites that need ${service} are SKIPPED. Start it or set ${envName}.\n${bar}\n`);
  return { available: false, reason };
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
