// An execution stack on a real Postgres for integration tests: a fresh clone
// of the migrated template per harness, a definitions directory synced into
// it, and one or more "nodes" (reconciler + executor + their own database
// handle), the way separate `tributary` processes would share one database.
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { sql, type Kysely } from "kysely";
import { inject } from "vitest";
import { launchRun, type LaunchRunRequest } from "../../src/api/index.js";
import { syncDefinitions } from "../../src/cli/definitions-sync.js";
import { InProcessExecutor, LocalExecutor, StoreExecutionBackend } from "../../src/executor/index.js";
import type { ExecutionBackend, Executor, StepDispatch, StepResult, StepStarted } from "../../src/execution/index.js";
import { Reconciler, type ReconcilerTask } from "../../src/reconciler/index.js";
import {
  createDatabase,
  databaseUrlWithName,
  dropDatabase,
  GraphCache,
  LocalDirOutputStore,
  openPostgres,
  PgDefinitionStore,
  PgRunStore,
  type Database,
  type OutputStore,
  type PostgresHandle,
  type RunDetail,
  type RunStatus,
} from "../../src/storage/index.js";
import { newTestDatabaseName } from "../support/test-database-names.js";
import { RUN_DECISIONS } from "../../src/planner/index.js";

/** Absolute path of the SDK, for definitions imported by vitest itself (the in-process executor). */
const SDK_PATH = new URL("../../src/index.ts", import.meta.url).pathname;

export type ExecutorChoice = "in-process" | "local";

export interface NodeOptions {
  /** Steps the node's executor runs at once (in-process: concurrency; local: processes × per process). Default 8. */
  readonly capacity?: number;
  /** LocalExecutor only: worker processes (default 1; capacity is then per process). */
  readonly processes?: number;
  readonly memoryMb?: number;
  readonly killGraceMs?: number;
}

export interface HarnessOptions {
  /** Definitions files, relative path → source (importing the SDK as "tributary"). */
  readonly files: Readonly<Record<string, string>>;
  readonly executor?: ExecutorChoice;
  /** Reconciler + executor pairs sharing the database. Default 1. */
  readonly nodes?: number;
  readonly node?: NodeOptions;
  /** true: a LocalDirOutputStore in a temp dir; false: none (the Postgres default); or this store. Default true. */
  readonly outputStore?: boolean | OutputStore;
  readonly pollIntervalMs?: number;
  readonly housekeepingIntervalMs?: number;
  readonly zombieAfterMs?: number;
  readonly queuedTimeoutMs?: number;
  readonly heartbeatIntervalMs?: number;
  readonly claimBatch?: number;
  /** Start the reconcilers at once (default true); otherwise call startNodes(). */
  readonly start?: boolean;
  /** Pass tasks of each node's reconciler (automation, backfills, alerts), built from that node's services. */
  readonly tasks?: (services: NodeServices) => readonly ReconcilerTask[];
}

/** What a node's pass tasks are built from: its own database handle and stores, and the harness clock. */
export interface NodeServices {
  readonly index: number;
  readonly handle: PostgresHandle;
  readonly runs: PgRunStore;
  readonly definitions: PgDefinitionStore;
  readonly graphs: GraphCache;
  readonly clock: () => Date;
}

export interface Node {
  readonly index: number;
  readonly handle: PostgresHandle;
  readonly runs: PgRunStore;
  /** The node's own view of the definitions: it sees a new version within its cache age (a second). */
  readonly graphs: GraphCache;
  readonly executor: Executor;
  readonly reconciler: Reconciler;
  readonly backend: KillableBackend;
  readonly errors: string[];
  /**
   * Simulates the node's process dying: the reconciler stops without a
   * goodbye, the executor's reports and heartbeats are dropped from now on,
   * so its claimed and running steps are left to zombie detection.
   */
  crash(): Promise<void>;
  readonly crashed: boolean;
}

export type Selection =
  { readonly partition: string } | { readonly from?: string; readonly to?: string } | { readonly all: true } | Record<string, never>;

export interface LaunchExtras {
  readonly includeUpstream?: boolean;
  readonly priority?: number;
  readonly origin?: LaunchRunRequest["origin"];
}

const TERMINAL_RUN: readonly RunStatus[] = ["success", "failed", "canceled"];

/**
 * A per-test execution stack. Call {@link stop} in afterEach (it is
 * idempotent): it stops reconcilers, closes executors and database handles,
 * drops the database and removes temp directories.
 */
export class Harness {
  readonly nodes: Node[] = [];
  /** The test's own connection (queries, admin-ish work). */
  handle!: PostgresHandle;
  url!: string;
  dbName!: string;
  dir!: string;
  logsDir!: string;
  scratch!: string;
  outputStore: OutputStore | null = null;
  definitions!: PgDefinitionStore;
  runs!: PgRunStore;
  graphs!: GraphCache;
  /** Added to the reconcilers' clock: tests move time forward (retry delays) without waiting. */
  clockShiftMs = 0;
  private adminUrl!: string;
  private stopped = false;
  private shadowDir: string | undefined;
  private readonly tempDirs: string[] = [];

  private constructor(readonly options: HarnessOptions) {}

  static async create(options: HarnessOptions): Promise<Harness> {
    const h = new Harness(options);
    try {
      await h.init();
    } catch (err) {
      await h.stop();
      throw err;
    }
    return h;
  }

  get db(): Kysely<Database> {
    return this.handle.db;
  }

  private async init(): Promise<void> {
    const context = inject("postgres");
    if (!context.available) throw new Error(`Postgres is unavailable: ${context.reason}`);
    this.adminUrl = context.adminUrl;
    this.dbName = newTestDatabaseName();
    await createDatabase(context.adminUrl, this.dbName, { template: context.templateDatabase });
    this.url = databaseUrlWithName(context.adminUrl, this.dbName);
    this.handle = await openPostgres({
      kind: "postgres",
      url: this.url,
      applicationName: "tributary-test",
      onConnectionError: () => undefined,
    });
    this.definitions = new PgDefinitionStore(this.db);
    this.runs = new PgRunStore(this.db, RUN_DECISIONS);
    this.graphs = new GraphCache(this.definitions, 0);

    this.scratch = await this.tempDir("tributary-exec-it-");
    this.dir = path.join(this.scratch, "defs");
    this.logsDir = path.join(this.scratch, "logs");
    await writeDefinitions(this.dir, this.options.files);
    await this.sync();
    const store = this.options.outputStore;
    if (typeof store === "object") this.outputStore = store;
    else if (store !== false) this.outputStore = new LocalDirOutputStore(path.join(this.scratch, "outputs"));

    for (let i = 0; i < (this.options.nodes ?? 1); i++) this.nodes.push(await this.makeNode(i));
    if (this.options.start !== false) await this.startNodes();
  }

  /** Loads the definitions directory and stores the snapshot (call again after changing files). */
  async sync(): Promise<number> {
    const outcome = await syncDefinitions(this.definitions, { dir: this.dir, timeoutMs: 30_000 });
    const failed = outcome.result.files.filter((f) => f.status === "error");
    if (failed.length > 0 || outcome.result.problems.length > 0) {
      throw new Error(
        `definitions did not load: ${JSON.stringify({ failed: failed.map((f) => [f.file, f.error?.message]), problems: outcome.result.problems.map((p) => p.message) })}`,
      );
    }
    return outcome.version;
  }

  /** Replaces the definitions files (and removes files not named) and syncs them. */
  async redefine(files: Readonly<Record<string, string>>): Promise<number> {
    await rm(this.dir, { recursive: true, force: true });
    await writeDefinitions(this.dir, files);
    if (this.shadowDir) await rm(this.shadowDir, { recursive: true, force: true });
    this.shadowDir = undefined;
    return this.sync();
  }

  async startNodes(): Promise<void> {
    for (const n of this.nodes) await n.reconciler.start();
  }

  /**
   * A restart: every node stops (reconciler, executor, connections; steps in
   * flight are given `graceMs` to finish), then as many new nodes start,
   * knowing only what is in the database.
   */
  async restartNodes(graceMs = 2_000): Promise<void> {
    const old = this.nodes.splice(0, this.nodes.length);
    for (const n of old) if (!n.crashed) await n.reconciler.stop();
    await Promise.all(old.map((n) => (n.crashed ? undefined : n.executor.close({ graceMs }).catch(() => undefined))));
    await Promise.all(old.map((n) => (n.crashed ? undefined : n.handle.close().catch(() => undefined))));
    for (let i = 0; i < old.length; i++) this.nodes.push(await this.makeNode(i));
    await this.startNodes();
  }

  private async makeNode(index: number): Promise<Node> {
    const o = this.options;
    const nodeOptions = o.node ?? {};
    const errors: string[] = [];
    const handle = await openPostgres({
      kind: "postgres",
      url: this.url,
      applicationName: `tributary-node-${index}`,
      onConnectionError: (e) => errors.push(`connection: ${e.message}`),
    });
    const runs = new PgRunStore(handle.db, RUN_DECISIONS);
    const graphs = new GraphCache(new PgDefinitionStore(handle.db));
    const dirs = { definitionsDir: this.dir, logsDir: this.logsDir };
    const inner = new StoreExecutionBackend({
      runs,
      definitions: new PgDefinitionStore(handle.db),
      graphs,
      outputStore: this.outputStore,
      // The mini-scheduler fast path, as `tributary dev` and `reconciler` run it.
      followUp: { executor: "local", dirs },
    });
    const backend = new KillableBackend(inner);
    const onError = (err: unknown, what: string): void => {
      errors.push(`${what}: ${(err as Error)?.message ?? String(err)}`);
    };
    const capacity = nodeOptions.capacity ?? 8;
    const executor: Executor =
      (o.executor ?? "in-process") === "local"
        ? new LocalExecutor(backend, {
            processes: nodeOptions.processes ?? 1,
            concurrencyPerProcess: capacity,
            definitionsDir: this.dir,
            killGraceMs: nodeOptions.killGraceMs ?? 1_000,
            heartbeatIntervalMs: o.heartbeatIntervalMs ?? 200,
            ...(nodeOptions.memoryMb ? { memoryMb: nodeOptions.memoryMb } : {}),
            onError,
          })
        : new InProcessExecutor(backend, {
            concurrency: capacity,
            killGraceMs: nodeOptions.killGraceMs ?? 1_000,
            heartbeatIntervalMs: o.heartbeatIntervalMs ?? 200,
            importModule: (file) => this.importInProcess(file),
            onError,
          });
    if (executor instanceof LocalExecutor) await executor.ready();
    const reconciler = new Reconciler({
      store: runs,
      database: handle,
      graphs,
      executors: { local: executor },
      definitionsDir: this.dir,
      logsDir: this.logsDir,
      id: `test-reconciler-${index}`,
      clock: () => new Date(Date.now() + this.clockShiftMs),
      pollIntervalMs: o.pollIntervalMs ?? 100,
      housekeepingIntervalMs: o.housekeepingIntervalMs ?? 100,
      zombieAfterMs: o.zombieAfterMs ?? 60_000,
      queuedTimeoutMs: o.queuedTimeoutMs ?? 60_000,
      ...(o.claimBatch ? { claimBatch: o.claimBatch } : {}),
      ...(o.tasks
        ? {
            tasks: o.tasks({
              index,
              handle,
              runs,
              definitions: new PgDefinitionStore(handle.db),
              graphs,
              clock: () => new Date(Date.now() + this.clockShiftMs),
            }),
          }
        : {}),
      log: (level, message) => {
        if (level !== "info") errors.push(`${level}: ${message}`);
      },
    });
    let crashed = false;
    const node: Node = {
      index,
      handle,
      runs,
      graphs,
      executor,
      reconciler,
      backend,
      errors,
      get crashed() {
        return crashed;
      },
      crash: async () => {
        crashed = true;
        backend.kill();
        // Not stop(): a dead process does not finish its pass. Unlisten and
        // let the loop find running = false; then drop the connections.
        void reconciler.stop();
        await executor.close({ graceMs: 0 }).catch(() => undefined);
        await handle.close();
      },
    };
    return node;
  }

  /**
   * The in-process executor imports definitions through vitest, which does
   * not know the bare `tributary` specifier outside this package: import a
   * shadow copy of the definitions directory whose files name the SDK by path.
   */
  private async importInProcess(file: string): Promise<Record<string, unknown>> {
    if (!this.shadowDir) {
      const shadow = await this.tempDir("tributary-exec-shadow-");
      await writeDefinitions(shadow, await readTree(this.dir), (text) =>
        text.replace(/from\s+["']tributary["']/g, `from ${JSON.stringify(SDK_PATH)}`),
      );
      this.shadowDir = shadow;
    }
    const rel = path.relative(this.dir, file);
    return (await import(/* @vite-ignore */ pathToFileURL(path.join(this.shadowDir, rel)).href)) as Record<string, unknown>;
  }

  async launch(keys: readonly string[], selection: Selection = {}, extras: LaunchExtras = {}): Promise<string> {
    const request: LaunchRunRequest = {
      assetKeys: keys,
      ...("partition" in selection ? { partition: selection.partition } : {}),
      ...("from" in selection && selection.from !== undefined ? { from: selection.from } : {}),
      ...("to" in selection && selection.to !== undefined ? { to: selection.to } : {}),
      ...("all" in selection ? { allPartitions: true } : {}),
      ...extras,
    };
    const { runId } = await launchRun({ graphs: this.graphs, runs: this.runs, definitions: this.definitions }, request, new Date());
    return runId;
  }

  /** Waits until the run ended (success, failed or canceled) and returns it with its steps. */
  async waitForRun(runId: string, timeoutMs = 30_000): Promise<RunDetail> {
    return this.waitForRuns([runId], timeoutMs).then((r) => r[0]!);
  }

  async waitForRuns(runIds: readonly string[], timeoutMs = 30_000): Promise<RunDetail[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from runs where id = any(${runIds}::uuid[]) and status in ('success', 'failed', 'canceled')`.execute(
        this.db,
      );
      if (rows[0]!.n === runIds.length) break;
      if (Date.now() > deadline) {
        throw new Error(`runs did not end within ${timeoutMs} ms: ${await this.describe(runIds)}`);
      }
      await sleep(25);
    }
    const out: RunDetail[] = [];
    for (const id of runIds) out.push((await this.runs.getRun(id))!);
    for (const r of out) if (!TERMINAL_RUN.includes(r.status)) throw new Error(`run ${r.id} is ${r.status}`);
    return out;
  }

  /** Polls `check` until it returns something other than undefined/false. */
  async until<T>(check: () => Promise<T | undefined | false>, timeoutMs = 15_000, what = "a condition"): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = await check();
      if (v !== undefined && v !== false) return v;
      if (Date.now() > deadline)
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; errors: ${this.errors().slice(0, 5).join(" | ")}`);
      await sleep(20);
    }
  }

  /** Step states per run, for failure messages. */
  async describe(runIds: readonly string[]): Promise<string> {
    const { rows } = await sql<{ run_id: string; status: string; state: string; n: number }>`
      select r.id as run_id, r.status, s.state, count(*)::int as n from runs r join steps s on s.run_id = r.id
      where r.id = any(${runIds}::uuid[]) group by r.id, r.status, s.state order by 1, 3`.execute(this.db);
    return JSON.stringify(rows) + ` errors: ${this.errors().slice(0, 5).join(" | ")}`;
  }

  errors(): string[] {
    return this.nodes.flatMap((n) => n.errors);
  }

  /** Sets a pool's slots (creating it). */
  async setPool(name: string, slots: number): Promise<void> {
    await sql`insert into pools (name, slots) values (${name}, ${slots})
              on conflict (name) do update set slots = excluded.slots`.execute(this.db);
  }

  async tempDir(prefix: string): Promise<string> {
    const dir = await mkdtemp(path.join(tmpdir(), prefix));
    this.tempDirs.push(dir);
    return dir;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const n of this.nodes) if (!n.crashed) await n.reconciler.stop().catch(() => undefined);
    await Promise.all(this.nodes.map((n) => (n.crashed ? undefined : n.executor.close({ graceMs: 500 }).catch(() => undefined))));
    await Promise.all(this.nodes.map((n) => n.handle.close().catch(() => undefined)));
    await this.handle?.close().catch(() => undefined);
    if (this.dbName && this.adminUrl) await dropDatabase(this.adminUrl, this.dbName).catch(() => undefined);
    // Retried: a step that was still ending may write its log file while the directory goes (ENOTEMPTY).
    await Promise.all(this.tempDirs.map((d) => rm(d, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 })));
  }
}

/**
 * Passes calls through until kill(); then every call is swallowed (never
 * reaching the database), as if the process making them had died.
 */
export class KillableBackend implements ExecutionBackend {
  private dead = false;
  /** Step results delivered through this backend (which node did the work). */
  finishedCount = 0;
  constructor(readonly inner: ExecutionBackend) {}
  kill(): void {
    this.dead = true;
  }
  get killed(): boolean {
    return this.dead;
  }
  private gate: Promise<void> | undefined;
  private openGate: (() => void) | undefined;
  /** Holds loadInputs calls until resumeInputs() (steps stay in the executor, unstarted). */
  pauseInputs(): void {
    this.gate ??= new Promise((resolve) => (this.openGate = resolve));
  }
  resumeInputs(): void {
    this.openGate?.();
    this.gate = undefined;
  }
  async loadInputs(steps: readonly StepDispatch[]) {
    if (this.gate) await this.gate;
    if (this.dead) return new Promise<never>(() => {});
    return this.inner.loadInputs(steps);
  }
  async started(events: readonly StepStarted[]): Promise<void> {
    if (!this.dead) await this.inner.started(events);
  }
  async heartbeat(steps: readonly { stepId: number; tryNumber: number }[]): Promise<void> {
    if (!this.dead) await this.inner.heartbeat(steps);
  }
  async finished(results: readonly StepResult[], options?: { readonly freeSlots: number }): Promise<readonly StepDispatch[] | void> {
    if (this.dead) return;
    const next = await this.inner.finished(results, options);
    this.finishedCount += results.length;
    return next;
  }
  async addDynamicPartitions(name: string, keys: readonly string[]): Promise<void> {
    if (!this.dead) await this.inner.addDynamicPartitions(name, keys);
  }
  materialized(assetKey: string, partitionKey: string): Promise<{ eventId: number } | undefined> {
    return this.inner.materialized(assetKey, partitionKey);
  }
}

async function writeDefinitions(
  dir: string,
  files: Readonly<Record<string, string>>,
  transform: (text: string) => string = (t) => t,
): Promise<void> {
  for (const [rel, text] of Object.entries(files)) {
    const file = path.join(dir, rel);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, transform(text));
  }
  await mkdir(dir, { recursive: true });
}

async function readTree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const abs = path.join(entry.parentPath, entry.name);
    out[path.relative(dir, abs)] = await readFile(abs, "utf8");
  }
  return out;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
