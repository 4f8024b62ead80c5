// /metrics, /healthz and /readyz of the HTTP app, in-process against real databases.
import { copyFile, mkdtemp, readdir, rm, writeFile, appendFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql, type Kysely, type KyselyPlugin } from "kysely";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createApiApp, type ApiServices, type Observability } from "../../src/api/index.js";
import { Reconciler, type ReconcilerOptions } from "../../src/reconciler/index.js";
import {
  createDatabase,
  databaseUrlWithName,
  DEFAULT_MIGRATIONS_DIR,
  dropDatabase,
  migrate,
  openPostgres,
  PgRunStore,
  PgTriggerStore,
  readMigrationFiles,
  type Database,
} from "../../src/storage/index.js";
import { Harness } from "../execution/harness.js";
import { createScratchDatabase, describePostgres } from "../support/pg.js";
import { openTestPglite } from "../support/pglite.js";
import { observabilityOn } from "../support/api-services.js";
import { newTestDatabaseName } from "../support/test-database-names.js";
import { parsePrometheusText, sample, type PrometheusText } from "./metrics-text.js";
import { RUN_DECISIONS } from "../../src/planner/index.js";
import { DependencyHealth } from "../../src/health/index.js";

// m/a: five daily partitions in a 3-slot pool; m/b: a step for an executor kind nobody here runs (it stays scheduled).
const DEFS = `
import { asset, daily } from "tributary";
export const a = asset({ key: "m/a", partitions: daily({ start: "2025-01-01" }), pool: "warehouse" }, async () => 1);
export const b = asset({ key: "m/b", executor: "bullmq", queue: "heavy" }, async () => 2);
`;

/** The app with services no route here reads: /metrics, /healthz and /readyz need only the database. */
function appOn(db: Kysely<Database>, observability: Observability) {
  const ping = async () => {
    await sql`select 1`.execute(db);
  };
  return createApiApp({ context: {} as unknown as ApiServices, ping, version: "test", observability });
}

async function scrape(app: ReturnType<typeof appOn>): Promise<PrometheusText> {
  const res = await app.request("/metrics");
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await res.text());
}

async function readyz(
  app: ReturnType<typeof appOn>,
): Promise<{ status: number; body: { status: string; problems: { code: string; message: string }[] } }> {
  const res = await app.request("/readyz");
  return { status: res.status, body: (await res.json()) as { status: string; problems: { code: string; message: string }[] } };
}

describePostgres("/metrics", () => {
  let h: Harness;
  let observability: Observability;
  let app: ReturnType<typeof appOn>;
  let statements = 0;
  let claimAt: Date;

  /** A reconciler over the harness's stores (no executor: it hands nothing out) reporting its passes to the metrics. */
  const reportingReconciler = (options: Partial<ReconcilerOptions> = {}) =>
    new Reconciler({
      store: h.runs,
      database: h.handle,
      graphs: h.graphs,
      executors: {},
      definitionsDir: h.dir,
      logsDir: h.logsDir,
      onPass: observability.metrics.observeReconcilerPass,
      ...options,
    });

  beforeAll(async () => {
    h = await Harness.create({ files: { "m.ts": DEFS }, start: false });
    const counter: KyselyPlugin = {
      transformQuery: (args) => {
        statements++;
        return args.node;
      },
      transformResult: async (args) => args.result,
    };
    // Created before any step is queued: the dispatch latency histogram counts tries queued since.
    observability = observabilityOn(h.db.withPlugin(counter));
    app = appOn(h.db, observability);
    await h.setPool("warehouse", 3);
    await h.launch(["m/a"], { from: "2025-01-01", to: "2025-01-05" });
    await h.launch(["m/b"]);
    // Claimed 3 s after the steps became runnable: each dispatch latency is 3 s plus the time the launches took.
    claimAt = new Date(Date.now() + 3_000);
    const claimed = await h.runs.claimRunnable({ now: claimAt, capacity: { local: 10 }, limit: 10 });
    expect(claimed).toHaveLength(3);
    await new PgTriggerStore(h.db, RUN_DECISIONS).createTriggers(
      [
        {
          kind: "fileExists",
          args: { path: "/in/x" },
          assetKey: "m/source",
          partitionKey: "2025-01-01",
          nextCheckAt: new Date(Date.now() - 60_000),
        },
        {
          kind: "fileExists",
          args: { path: "/in/y" },
          assetKey: "m/source",
          partitionKey: "2025-01-02",
          nextCheckAt: new Date("2099-01-01T00:00:00Z"),
        },
        { kind: "httpOk", args: { url: "http://example.invalid" }, assetKey: "m/api", nextCheckAt: new Date("2099-01-01T00:00:00Z") },
      ],
      new Date(),
    );
    // A real pass over the store, reporting to the metrics (no executor here: it hands nothing out).
    const reconciler = reportingReconciler();
    await reconciler.pass();
    await sql`analyze steps`.execute(h.db);
  }, 90_000);

  afterAll(() => h?.stop());

  it("renders every metric as Prometheus text, each family with HELP and TYPE, with the run's values", async () => {
    const text = await scrape(app);
    for (const family of text.families.values()) {
      expect(family.name).toMatch(/^tributary_/);
      expect(family.help, family.name).not.toBe("");
    }
    expect(sample(text, "tributary_steps", { state: "queued" })).toBe(3);
    expect(sample(text, "tributary_steps", { state: "scheduled" })).toBe(3);
    for (const state of ["pending", "running", "up_for_retry", "up_for_reschedule", "deferred"]) {
      expect(sample(text, "tributary_steps", { state })).toBe(0);
    }
    expect(sample(text, "tributary_queue_depth", { executor: "local", queue: "" })).toBe(2);
    expect(sample(text, "tributary_queue_depth", { executor: "bullmq", queue: "heavy" })).toBe(1);
    // The same scheduled steps by pool (two partitions of m/a wait for a warehouse slot), and those handed over.
    expect(sample(text, "tributary_pool_queued_steps", { pool: "warehouse" })).toBe(2);
    expect(sample(text, "tributary_pool_queued_steps", { pool: "default_pool" })).toBe(1);
    expect(sample(text, "tributary_executor_queued_steps", { executor: "local", queue: "" })).toBe(3);
    expect(sample(text, "tributary_triggers", { kind: "fileExists", status: "waiting" })).toBe(2);
    expect(sample(text, "tributary_triggers", { kind: "httpOk", status: "waiting" })).toBe(1);
    expect(sample(text, "tributary_runs", { status: "queued" }) + sample(text, "tributary_runs", { status: "running" })).toBe(2);
    expect(sample(text, "tributary_pool_slots", { pool: "warehouse" })).toBe(3);
    expect(sample(text, "tributary_pool_occupied_slots", { pool: "warehouse" })).toBe(3);
    expect(sample(text, "tributary_pool_slots", { pool: "default_pool" })).toBe(128);
    expect(sample(text, "tributary_pool_occupied_slots", { pool: "default_pool" })).toBe(0);
    expect(sample(text, "tributary_triggers_waiting", { kind: "fileExists" })).toBe(2);
    expect(sample(text, "tributary_triggers_due", { kind: "fileExists" })).toBe(1);
    expect(sample(text, "tributary_triggers_waiting", { kind: "httpOk" })).toBe(1);
    expect(sample(text, "tributary_triggers_due", { kind: "httpOk" })).toBe(0);
    expect(sample(text, "tributary_table_rows_estimate", { table: "steps" })).toBe(6);

    expect(text.families.get("tributary_dispatch_latency_seconds")?.type).toBe("histogram");
    expect(sample(text, "tributary_dispatch_latency_seconds_count", {})).toBe(3);
    expect(sample(text, "tributary_dispatch_latency_seconds_bucket", { le: "2.5" })).toBe(0);
    expect(sample(text, "tributary_dispatch_latency_seconds_bucket", { le: "5" })).toBe(3);
    expect(sample(text, "tributary_dispatch_latency_seconds_sum", {})).toBeGreaterThanOrEqual(9);

    expect(text.families.get("tributary_reconciler_pass_duration_seconds")?.type).toBe("histogram");
    expect(sample(text, "tributary_reconciler_pass_duration_seconds_count", { outcome: "ok" })).toBe(1);
    expect(sample(text, "tributary_reconciler_pass_duration_seconds_sum", { outcome: "ok" })).toBeGreaterThan(0);
    expect(sample(text, "tributary_reconciler_dispatched_steps_total", {})).toBe(0);
  });

  it("counts each queued try once across scrapes, and follows the gauges as steps move", async () => {
    const before = await scrape(app);
    expect(sample(before, "tributary_dispatch_latency_seconds_count", {})).toBe(3);
    await h.setPool("warehouse", 5);
    expect(await h.runs.claimRunnable({ now: new Date(claimAt.getTime() + 1), capacity: { local: 10 }, limit: 10 })).toHaveLength(2);
    const after = await scrape(app);
    expect(sample(after, "tributary_dispatch_latency_seconds_count", {})).toBe(5);
    expect(sample(after, "tributary_steps", { state: "queued" })).toBe(5);
    expect(sample(after, "tributary_steps", { state: "scheduled" })).toBe(1);
    expect(sample(after, "tributary_pool_occupied_slots", { pool: "warehouse" })).toBe(5);
    // The local queue is empty now: its series is gone, not stuck at its last value.
    expect(after.samples.some((s) => s.name === "tributary_queue_depth" && s.labels.executor === "local")).toBe(false);
  });

  it("records a pass that failed (its connection is gone) under outcome=failed", async () => {
    const lost = await openPostgres({ kind: "postgres", url: h.url });
    const reconciler = reportingReconciler({ store: new PgRunStore(lost.db, RUN_DECISIONS), database: lost });
    await lost.close();
    await expect(reconciler.pass()).rejects.toThrow();
    const text = await scrape(app);
    expect(sample(text, "tributary_reconciler_pass_duration_seconds_count", { outcome: "failed" })).toBe(1);
    expect(sample(text, "tributary_reconciler_pass_duration_seconds_count", { outcome: "ok" })).toBe(1);
  });

  it("costs the same few statements whatever the history holds", async () => {
    statements = 0;
    await scrape(app);
    const few = statements;
    expect(few).toBeLessThanOrEqual(10);
    // 500 more finished steps of history, then the same number of statements.
    await sql`
      insert into steps (run_id, asset_key, partition_key, state)
      select (select id from runs limit 1), 'm/history', g::text, 'success' from generate_series(1, 500) g`.execute(h.db);
    statements = 0;
    await scrape(app);
    expect(statements).toBe(few);
  });

  it("counts triggers by status, and keeps the counts right once settled ids are no longer read", async () => {
    await sql`update triggers set status = 'fired', ended_at = now() where kind = 'httpOk'`.execute(h.db);
    const first = await scrape(app);
    expect(sample(first, "tributary_triggers", { kind: "httpOk", status: "fired" })).toBe(1);
    expect(first.samples.some((x) => x.name === "tributary_triggers" && x.labels.kind === "httpOk" && x.labels.status === "waiting")).toBe(
      false,
    );
    // Every trigger leaves waiting: the next scrapes settle them and stop reading them, the totals stay.
    await sql`update triggers set status = 'timed_out', ended_at = now() where status = 'waiting'`.execute(h.db);
    for (let i = 0; i < 3; i++) {
      const text = await scrape(app);
      expect(sample(text, "tributary_triggers", { kind: "fileExists", status: "timed_out" })).toBe(2);
      expect(sample(text, "tributary_triggers", { kind: "httpOk", status: "fired" })).toBe(1);
    }
    // Newer triggers are counted on top of the settled ones.
    await sql`
      insert into triggers (kind, status, asset_key, partition_key, ended_at)
      select 'fileExists', 'canceled', 'm/source', 'x' || g, now() from generate_series(1, 4) g`.execute(h.db);
    const later = await scrape(app);
    expect(sample(later, "tributary_triggers", { kind: "fileExists", status: "canceled" })).toBe(4);
    expect(sample(later, "tributary_triggers", { kind: "fileExists", status: "timed_out" })).toBe(2);
    const { rows } = await sql<{ kind: string; status: string; n: number }>`
      select kind, status, count(*)::int as n from triggers group by kind, status`.execute(h.db);
    for (const r of rows)
      expect(sample(later, "tributary_triggers", { kind: r.kind, status: r.status }), `${r.kind} ${r.status}`).toBe(r.n);
  });

  it("times each reconciler task of a pass, by task and outcome", async () => {
    const reconciler = reportingReconciler({
      log: () => undefined,
      tasks: [
        { name: "slow", run: () => new Promise((r) => setTimeout(r, 30)) },
        {
          name: "broken",
          run: async () => {
            throw new Error("task failed on purpose");
          },
        },
      ],
    });
    await reconciler.pass();
    await reconciler.pass();
    const text = await scrape(app);
    expect(text.families.get("tributary_reconciler_task_duration_seconds")?.type).toBe("histogram");
    expect(sample(text, "tributary_reconciler_task_duration_seconds_count", { task: "slow", outcome: "ok" })).toBe(2);
    expect(sample(text, "tributary_reconciler_task_duration_seconds_sum", { task: "slow", outcome: "ok" })).toBeGreaterThanOrEqual(0.05);
    expect(sample(text, "tributary_reconciler_task_duration_seconds_count", { task: "broken", outcome: "failed" })).toBe(2);
  });

  it("names a dependency this process cannot reach on /readyz (503) and in tributary_dependency_up, until it is back", async () => {
    const health = new DependencyHealth({ log: () => undefined });
    health.register("postgres");
    health.register("redis");
    const watched = appOn(h.db, observabilityOn(h.db, { dependencies: () => health.states() }));
    health.failed("redis", new Error("connect ECONNREFUSED 127.0.0.1:6390"));
    const down = await readyz(watched);
    expect(down.status).toBe(503);
    expect(down.body.problems).toEqual([
      {
        code: "DEPENDENCY_UNREACHABLE",
        message: expect.stringMatching(/^redis is unreachable since .*: connect ECONNREFUSED 127\.0\.0\.1:6390$/),
      },
    ]);
    expect(down.body).toMatchObject({
      dependencies: [
        { name: "postgres", up: true },
        { name: "redis", up: false },
      ],
    });
    let text = await scrape(watched);
    expect(sample(text, "tributary_dependency_up", { dependency: "redis" })).toBe(0);
    expect(sample(text, "tributary_dependency_up", { dependency: "postgres" })).toBe(1);
    expect(sample(text, "tributary_dependency_outages_total", { dependency: "redis" })).toBe(1);
    health.recovered("redis");
    expect((await readyz(watched)).status).toBe(200);
    text = await scrape(watched);
    expect(sample(text, "tributary_dependency_up", { dependency: "redis" })).toBe(1);
    health.close();
  });

  it("answers /readyz 200 on a migrated database and /healthz 200", async () => {
    expect(await readyz(app)).toEqual({ status: 200, body: { status: "ready", problems: [], dependencies: [] } });
    const health = await app.request("/healthz");
    expect(health.status).toBe(200);
  });
});

describePostgres("/readyz and /healthz against a database that is behind, ahead or gone", () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  /** Runs `fn` on a new empty database, then closes and drops it. */
  async function withScratchDatabase(fn: (db: Kysely<Database>) => Promise<void>): Promise<void> {
    const scratch = await createScratchDatabase();
    const handle = await openPostgres({ kind: "postgres", url: scratch.url });
    try {
      await fn(handle.db);
    } finally {
      await handle.close();
      await scratch.drop();
    }
  }

  /** A copy of migrations/ without its last file, and the name of that file. */
  async function migrationsWithoutLast(): Promise<{ dir: string; last: string }> {
    const dir = await mkdtemp(path.join(tmpdir(), "tributary-readyz-"));
    dirs.push(dir);
    const files = await readMigrationFiles();
    const last = files.at(-1)!.name;
    for (const name of await readdir(DEFAULT_MIGRATIONS_DIR)) {
      if (name.endsWith(".sql") && name !== `${last}.sql`) await copyFile(path.join(DEFAULT_MIGRATIONS_DIR, name), path.join(dir, name));
    }
    return { dir, last };
  }

  it("503 MIGRATIONS_PENDING naming the migration a database lacks", async () => {
    await withScratchDatabase(async (db) => {
      const { dir, last } = await migrationsWithoutLast();
      await migrate(db, { dir });
      const { status, body } = await readyz(appOn(db, observabilityOn(db)));
      expect(status).toBe(503);
      expect(body.status).toBe("not_ready");
      expect(body.problems).toHaveLength(1);
      expect(body.problems[0]!.code).toBe("MIGRATIONS_PENDING");
      expect(body.problems[0]!.message).toContain(last);
      expect(body.problems[0]!.message).toContain("tributary migrate");
      // Readiness only looks: nothing was migrated by asking.
      expect((await sql<{ n: number }>`select count(*)::int as n from schema_migrations`.execute(db)).rows[0]!.n).toBe(
        (await readMigrationFiles()).length - 1,
      );
    });
  });

  it("503 MIGRATIONS_PENDING listing every file for a database never migrated", async () => {
    await withScratchDatabase(async (db) => {
      const { status, body } = await readyz(appOn(db, observabilityOn(db)));
      expect(status).toBe(503);
      expect(body.problems.map((p) => p.code)).toEqual(["MIGRATIONS_PENDING"]);
      for (const file of await readMigrationFiles()) expect(body.problems[0]!.message).toContain(file.name);
    });
  });

  it("503 MIGRATIONS_UNKNOWN and MIGRATIONS_CHANGED naming the file, when the code's files differ from what was applied", async () => {
    await withScratchDatabase(async (db) => {
      await migrate(db);
      const { dir, last } = await migrationsWithoutLast();
      const older = await readyz(appOn(db, observabilityOn(db, { migrationsDir: dir })));
      expect(older.status).toBe(503);
      expect(older.body.problems.map((p) => p.code)).toEqual(["MIGRATIONS_UNKNOWN"]);
      expect(older.body.problems[0]!.message).toContain(last);

      const first = (await readMigrationFiles())[0]!.name;
      await appendFile(path.join(dir, `${first}.sql`), "\n-- edited after it was applied\n");
      await writeFile(path.join(dir, "9999_not_applied.sql"), "select 1;\n");
      const edited = await readyz(appOn(db, observabilityOn(db, { migrationsDir: dir })));
      expect(edited.status).toBe(503);
      expect(edited.body.problems.map((p) => p.code)).toEqual(["MIGRATIONS_PENDING", "MIGRATIONS_UNKNOWN", "MIGRATIONS_CHANGED"]);
      expect(edited.body.problems[0]!.message).toContain("9999_not_applied");
      expect(edited.body.problems[2]!.message).toContain(first);
    });
  });

  it("503 MIGRATIONS_UNCHECKED when the migration files cannot be read", async () => {
    await withScratchDatabase(async (db) => {
      const missing = path.join(tmpdir(), "tributary-no-such-migrations-dir");
      const { status, body } = await readyz(appOn(db, observabilityOn(db, { migrationsDir: missing })));
      expect(status).toBe(503);
      expect(body.problems.map((p) => p.code)).toEqual(["MIGRATIONS_UNCHECKED"]);
      expect(body.problems[0]!.message).toContain(missing);
    });
  });

  it("/healthz, /readyz and /metrics answer 503 naming the database once it is gone", async () => {
    const context = inject("postgres");
    if (!context.available) throw new Error("unreachable: describePostgres skips without Postgres");
    const name = newTestDatabaseName();
    await createDatabase(context.adminUrl, name, { template: context.templateDatabase });
    const handle = await openPostgres({
      kind: "postgres",
      url: databaseUrlWithName(context.adminUrl, name),
      onConnectionError: () => undefined,
    });
    try {
      const app = appOn(handle.db, observabilityOn(handle.db));
      expect((await app.request("/healthz")).status).toBe(200);
      expect((await readyz(app)).status).toBe(200);
      await dropDatabase(context.adminUrl, name);

      const health = await app.request("/healthz");
      expect(health.status).toBe(503);
      const healthBody = (await health.json()) as { status: string; error: string };
      expect(healthBody.status).toBe("unavailable");
      expect(healthBody.error).not.toBe("");
      const ready = await readyz(app);
      expect(ready.status).toBe(503);
      expect(ready.body.problems.map((p) => p.code)).toEqual(["DATABASE_UNREACHABLE"]);
      expect(ready.body.problems[0]!.message).toMatch(/^the database did not answer: ./);
      const metrics = await app.request("/metrics");
      expect(metrics.status).toBe(503);
      expect(await metrics.text()).toMatch(/^# metrics unavailable: the database did not answer: ./);
    } finally {
      await handle.close().catch(() => undefined);
      await dropDatabase(context.adminUrl, name);
    }
  });
});

describe("/metrics and /readyz", () => {
  it("are not served by an app created without observability", async () => {
    const app = createApiApp({ context: {} as unknown as ApiServices, ping: async () => {}, version: "test" });
    expect((await app.request("/metrics")).status).toBe(404);
    expect((await app.request("/readyz")).status).toBe(404);
  });

  it("work on the embedded database (PGlite), as `tributary dev` runs by default", async () => {
    const handle = await openTestPglite();
    try {
      const app = appOn(handle.db, observabilityOn(handle.db));
      expect(await readyz(app)).toEqual({ status: 200, body: { status: "ready", problems: [], dependencies: [] } });
      const text = await scrape(app);
      expect(sample(text, "tributary_steps", { state: "scheduled" })).toBe(0);
      expect(sample(text, "tributary_pool_slots", { pool: "default_pool" })).toBe(128);
      expect(sample(text, "tributary_dispatch_latency_seconds_count", {})).toBe(0);
    } finally {
      await handle.close();
    }
  }, 60_000);
});
