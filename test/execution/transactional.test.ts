// The transactional executor: a step's own writes (through ctx.tx), its output
// and its state change commit in one transaction. Faults on the commit path,
// a real SIGKILL of the process between the write and the commit, and stale
// tries must leave each partition's row applied exactly once.
import { spawn } from "node:child_process";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { sql } from "kysely";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { arm, disarmAll, StoreExecutionBackend, TransactionalExecutor, TRANSACTIONAL_NEEDS_POSTGRES } from "../../src/executor/index.js";
import type { ExecutionBackend, StepDispatch, StepResult } from "../../src/execution/index.js";
import { StepRuntime } from "../../src/executor/step-runtime.js";
import { asset } from "../../src/index.js";
import { Reconciler } from "../../src/reconciler/index.js";
import { buildDispatch } from "../../src/execution/index.js";
import { GraphCache, openPostgres, PgDefinitionStore, PgRunStore, type ClaimedStep, type PostgresHandle } from "../../src/storage/index.js";
import { describePostgres } from "../support/pg.js";
import { Harness, sleep } from "./harness.js";
import { RUN_DECISIONS } from "../../src/planner/index.js";

const SDK_PATH = fileURLToPath(new URL("../../src/index.ts", import.meta.url));
const CHILD = fileURLToPath(new URL("./transactional-node.ts", import.meta.url));

const DEFS = `
import { asset, staticPartitions } from "tributary";

// One row per try that reaches its commit: a second row for a partition is a write applied twice.
export const ledger = asset(
  {
    key: "tx/ledger",
    executor: "transactional",
    partitions: staticPartitions(["p1", "p2", "p3", "p4", "p5", "p6"]),
    retries: { max: 2, delay: 0 },
  },
  async (ctx) => {
    await ctx.tx.insertInto("tx_rows").values({ partition_key: ctx.partition.key, try_number: ctx.tryNumber, pid: process.pid }).execute();
    return { partition: ctx.partition.key, tryNumber: ctx.tryNumber };
  },
);

// Keeps ctx.tx for later: once the function returned, the transaction must refuse it.
export const leaky = asset({ key: "tx/leaky", executor: "transactional" }, async (ctx) => {
  const tx = ctx.tx;
  globalThis.__txLeakyLater = () => tx.insertInto("tx_rows").values({ partition_key: "leaky", try_number: ctx.tryNumber, pid: 0 }).execute();
  return "done";
});

// Writes, then fails: nothing of it may remain.
export const broken = asset({ key: "tx/broken", executor: "transactional" }, async (ctx) => {
  await ctx.tx.insertInto("tx_rows").values({ partition_key: "broken", try_number: ctx.tryNumber, pid: process.pid }).execute();
  throw new Error("fails after its write");
});

// Writes, then its first try loses its session (as in a database restart): the try is the infrastructure's, and the
// retry (with no retries of its own) applies the write once.
export const severed = asset({ key: "tx/severed", executor: "transactional" }, async (ctx) => {
  await ctx.tx.insertInto("tx_rows").values({ partition_key: "severed", try_number: ctx.tryNumber, pid: process.pid }).execute();
  if (ctx.tryNumber === 1) await ctx.tx.selectNoFrom((eb) => eb.fn("pg_terminate_backend", [eb.fn("pg_backend_pid", [])]).as("t")).execute();
  return "kept";
});

// Writes, then blocks in the database past its timeout: the query is canceled and the write rolled back.
export const slow = asset({ key: "tx/slow", executor: "transactional", timeout: "1s" }, async (ctx) => {
  await ctx.tx.insertInto("tx_rows").values({ partition_key: "slow", try_number: ctx.tryNumber, pid: process.pid }).execute();
  await ctx.tx.selectNoFrom((eb) => eb.fn("pg_sleep", [eb.val(30)]).as("slept")).execute();
  return "never";
});
`;

interface TxNode {
  readonly handle: PostgresHandle;
  readonly executor: TransactionalExecutor;
  readonly reconciler: Reconciler;
  readonly errors: string[];
  stop(): Promise<void>;
}

/** A copy of the definitions naming the SDK by path (a temp directory cannot resolve "tributary"). */
async function shadowOf(h: Harness): Promise<string> {
  const shadow = await h.tempDir("tributary-tx-shadow-");
  for (const name of await readdir(h.dir)) {
    const text = await readFile(path.join(h.dir, name), "utf8");
    await writeFile(path.join(shadow, name), text.replace(/from\s+["']tributary["']/g, `from ${JSON.stringify(SDK_PATH)}`));
  }
  return shadow;
}

async function startNode(h: Harness, shadow: string, options: { zombieAfterMs?: number } = {}): Promise<TxNode> {
  const errors: string[] = [];
  const handle = await openPostgres({
    kind: "postgres",
    url: h.url,
    applicationName: "tributary-tx-node",
    onConnectionError: (e) => errors.push(e.message),
  });
  const runs = new PgRunStore(handle.db, RUN_DECISIONS);
  const definitions = new PgDefinitionStore(handle.db);
  const graphs = new GraphCache(definitions);
  const dirs = { definitionsDir: h.dir, logsDir: h.logsDir };
  const backend = new StoreExecutionBackend({
    runs,
    definitions,
    graphs,
    outputStore: h.outputStore,
    followUp: { executor: "transactional", dirs },
  });
  const executor = new TransactionalExecutor(backend, {
    database: handle,
    runs,
    killGraceMs: 500,
    importModule: async (file) =>
      (await import(/* @vite-ignore */ pathToFileURL(path.join(shadow, path.relative(h.dir, file))).href)) as Record<string, unknown>,
    onError: (err, what) => errors.push(`${what}: ${(err as Error).message}`),
  });
  const reconciler = new Reconciler({
    store: runs,
    database: handle,
    graphs,
    executors: { transactional: executor },
    definitionsDir: h.dir,
    logsDir: h.logsDir,
    id: `tx-node-${Math.random().toString(36).slice(2, 8)}`,
    pollIntervalMs: 100,
    housekeepingIntervalMs: 100,
    zombieAfterMs: options.zombieAfterMs ?? 60_000,
    queuedTimeoutMs: 60_000,
    log: (level, message) => {
      if (level !== "info") errors.push(`${level}: ${message}`);
    },
  });
  await reconciler.start();
  return {
    handle,
    executor,
    reconciler,
    errors,
    async stop() {
      await reconciler.stop();
      await executor.close({ graceMs: 1_000 });
      await handle.close();
    },
  };
}

async function createUserTable(h: Harness): Promise<void> {
  await sql`create table tx_rows (
    id serial primary key,
    partition_key text not null,
    try_number int not null,
    pid int not null,
    tx_id xid8 not null default pg_current_xact_id()
  )`.execute(h.db);
}

async function rowsOf(h: Harness, partition: string): Promise<{ try_number: number; pid: number }[]> {
  const { rows } = await sql<{ try_number: number; pid: number }>`
    select try_number, pid from tx_rows where partition_key = ${partition} order by id`.execute(h.db);
  return rows;
}

interface TryRow {
  try_number: number;
  state: string;
  worker_id: string | null;
  pid: number | null;
  error: { code?: string; message?: string } | null;
  failure_class: string | null;
}

async function triesOf(h: Harness, runId: string): Promise<TryRow[]> {
  const { rows } = await sql<TryRow>`
    select t.try_number, t.state, t.worker_id, t.pid, t.error, t.failure_class from step_tries t where t.run_id = ${runId} order by t.try_number`.execute(
    h.db,
  );
  return rows;
}

/** The materialisation of the partition was inserted by the transaction that inserted the user's row. */
async function materializedWithRow(h: Harness, partition: string): Promise<{ try_number: number }[]> {
  const { rows } = await sql<{ try_number: number }>`
    select e.try_number from events e join tx_rows r on r.tx_id = e.tx_id and r.partition_key = e.partition_key
    where e.kind = 'materialization' and e.asset_key = 'tx/ledger' and e.partition_key = ${partition}`.execute(h.db);
  return rows;
}

describePostgres("execution: the transactional executor", () => {
  describe("in-process faults", () => {
    let h: Harness;
    let node: TxNode;
    let shadow: string;
    beforeAll(async () => {
      h = await Harness.create({ files: { "tx.ts": DEFS }, nodes: 0 });
      await createUserTable(h);
      shadow = await shadowOf(h);
      node = await startNode(h, shadow);
    });
    afterEach(() => disarmAll());
    afterAll(async () => {
      disarmAll();
      await node?.stop().catch(() => undefined);
      await h?.stop();
    });

    it("commits the function's write with the step's materialisation, once", async () => {
      const run = await h.waitForRun(await h.launch(["tx/ledger"], { partition: "p1" }));
      expect(run.status).toBe("success");
      expect(await rowsOf(h, "p1")).toEqual([{ try_number: 1, pid: process.pid }]);
      expect(await materializedWithRow(h, "p1")).toEqual([{ try_number: 1 }]);
      const tries = await triesOf(h, run.id);
      expect(tries.map((t) => [t.try_number, t.state])).toEqual([[1, "success"]]);
      expect(tries[0]!.worker_id).toMatch(/^transactional:/);
      const { rows } = await sql<{ value: unknown }>`
        select inline_value as value from outputs where run_id = ${run.id}`.execute(h.db);
      expect(rows).toEqual([{ value: { partition: "p1", tryNumber: 1 } }]);
    });

    for (const point of ["tx:after-function", "tx:after-completion"] as const) {
      it(`a crash at ${point} applies nothing; the retry applies the write once`, async () => {
        const partition = point === "tx:after-function" ? "p2" : "p3";
        arm(point, "throw", { times: 1 });
        const run = await h.waitForRun(await h.launch(["tx/ledger"], { partition }));
        expect(run.status).toBe("success");
        expect(await rowsOf(h, partition)).toEqual([{ try_number: 2, pid: process.pid }]);
        expect(await materializedWithRow(h, partition)).toEqual([{ try_number: 2 }]);
        const tries = await triesOf(h, run.id);
        expect(tries.map((t) => [t.try_number, t.state])).toEqual([
          [1, "failed"],
          [2, "success"],
        ]);
        expect(tries[0]!.error?.code).toBe("TRANSACTION_FAILED");
        expect(tries[0]!.error?.message).toContain(`fault injected at "${point}"`);
      });
    }

    it("a failure after the write rolls the write back", async () => {
      const run = await h.waitForRun(await h.launch(["tx/broken"]));
      expect(run.status).toBe("failed");
      expect(await rowsOf(h, "broken")).toEqual([]);
      const tries = await triesOf(h, run.id);
      expect(tries.map((t) => t.state)).toEqual(["failed"]);
      expect(tries[0]!.error?.message).toContain("fails after its write");
    });

    it("a try whose session is lost while the function runs is an infrastructure failure; the retry applies the write once", async () => {
      const run = await h.waitForRun(await h.launch(["tx/severed"]));
      expect(run.status).toBe("success");
      expect(await rowsOf(h, "severed")).toEqual([{ try_number: 2, pid: process.pid }]);
      const tries = await triesOf(h, run.id);
      expect(tries.map((t) => [t.try_number, t.state, t.failure_class])).toEqual([
        [1, "failed", "infrastructure"],
        [2, "success", null],
      ]);
      expect(tries[0]!.error?.code).toBe("TRANSACTION_FAILED");
    });

    it("refuses ctx.tx once the function has returned", async () => {
      const run = await h.waitForRun(await h.launch(["tx/leaky"]));
      expect(run.status).toBe("success");
      const later = (globalThis as { __txLeakyLater?: () => Promise<unknown> }).__txLeakyLater!;
      await expect(later()).rejects.toMatchObject({ code: "TRANSACTION_ENDED" });
      expect(await rowsOf(h, "leaky")).toEqual([]);
    });

    it("a timeout cancels the function's query and rolls its write back", async () => {
      const started = Date.now();
      const run = await h.waitForRun(await h.launch(["tx/slow"]));
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(run.status).toBe("failed");
      expect(await rowsOf(h, "slow")).toEqual([]);
      const tries = await triesOf(h, run.id);
      expect(tries[0]!.error?.code).toBe("STEP_TIMEOUT");
    });

    it("a stale try (an ended step, or another try number) applies nothing and reports nothing", async () => {
      const first = await h.waitForRun(await h.launch(["tx/ledger"], { partition: "p5" }));
      expect(first.status).toBe("success");
      const step = first.steps.find((s) => s.assetKey === "tx/ledger")!;
      const { graph } = await h.graphs.current();
      const claim: ClaimedStep = {
        stepId: step.id,
        runId: first.id,
        tryNumber: 1,
        lastTry: 3,
        assetKey: "tx/ledger",
        partitionKey: "p5",
        mapIndex: -1,
        executor: "transactional",
        snapshotVersion: 1,
        mapItem: null,
        mapLabel: null,
        checkName: null,
        timeoutMs: null,
        queue: null,
        resumed: [],
        waitStartedAt: null,
      };
      const dispatch = buildDispatch(claim, { asset: graph.require("tx/ledger") }, { definitionsDir: h.dir, logsDir: h.logsDir });
      let locked = 0;
      arm("tx:after-lock", () => {
        locked++;
      });
      const capacity = node.executor.freeSlots();
      // The try that succeeded, handed out again; and a try number the step never reached.
      node.executor.submit([dispatch]);
      await h.until(async () => node.executor.freeSlots() === capacity, 10_000, "the stale try to end");
      node.executor.submit([{ ...dispatch, tryNumber: 7 }]);
      await h.until(async () => node.executor.freeSlots() === capacity, 10_000, "the second stale try to end");
      await sleep(100);
      expect(locked).toBe(0);
      expect(await rowsOf(h, "p5")).toEqual([{ try_number: 1, pid: process.pid }]);
      expect((await triesOf(h, first.id)).map((t) => [t.try_number, t.state])).toEqual([[1, "success"]]);
      expect(node.errors).toEqual([]);
    });
  });

  describe("a real kill between the step's write and its commit", () => {
    let h: Harness;
    let shadow: string;
    let node: TxNode | undefined;
    beforeAll(async () => {
      h = await Harness.create({ files: { "tx.ts": DEFS }, nodes: 0 });
      await createUserTable(h);
      shadow = await shadowOf(h);
    });
    afterAll(async () => {
      await node?.stop().catch(() => undefined);
      await h?.stop();
    });

    it("applies nothing; after zombie detection another process retries and applies it once", async () => {
      await mkdir(h.logsDir, { recursive: true });
      const child = spawn(process.execPath, ["--import", "tsx", CHILD, h.url, h.dir, h.logsDir], {
        env: { ...process.env, TRIBUTARY_FAULTS: "tx:after-function=kill" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stderr = "";
      child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        child.on("exit", (code, signal) => resolve({ code, signal })),
      );
      await new Promise<void>((resolve, reject) => {
        child.stdout.on("data", (b: Buffer) => {
          if (b.toString().includes("ready")) resolve();
        });
        void exited.then(() => reject(new Error(`the child exited before it was ready: ${stderr}`)));
      });
      const runId = await h.launch(["tx/ledger"], { partition: "p4" });
      const exit = await Promise.race([exited, sleep(30_000).then(() => undefined)]);
      if (!exit) child.kill("SIGKILL");
      expect(exit?.signal, stderr).toBe("SIGKILL");

      // The child's transaction died with its connection: its write is gone, the step still looks running.
      await h.until(
        async () => {
          const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from pg_stat_activity where application_name = 'tributary-tx-child'`.execute(h.db);
          return rows[0]!.n === 0;
        },
        10_000,
        "the child's sessions to end",
      );
      expect(await rowsOf(h, "p4")).toEqual([]);
      const before = await triesOf(h, runId);
      expect(before.map((t) => [t.try_number, t.state, t.pid])).toEqual([[1, "running", child.pid]]);

      // Another process: finds the zombie (stale heartbeat, row no longer locked), retries it, commits once.
      node = await startNode(h, shadow, { zombieAfterMs: 1_000 });
      const run = await h.waitForRun(runId, 30_000);
      expect(run.status).toBe("success");
      expect(await rowsOf(h, "p4")).toEqual([{ try_number: 2, pid: process.pid }]);
      expect(await materializedWithRow(h, "p4")).toEqual([{ try_number: 2 }]);
      const tries = await triesOf(h, runId);
      expect(tries.map((t) => [t.try_number, t.state])).toEqual([
        [1, "failed"],
        [2, "success"],
      ]);
      expect(tries[0]!.error?.code).toBe("STEP_ZOMBIE");
      expect(tries[1]!.pid).toBe(process.pid);
    });
  });

  describe("ctx.tx elsewhere", () => {
    it("is undefined under other executors", async () => {
      const probe = asset({ key: "t/probe" }, (ctx) => ({ hasTx: ctx.tx !== undefined }));
      const runtime = new StepRuntime({
        importModule: async () => ({ probe }),
        addDynamicPartitions: async () => undefined,
        materialized: async () => undefined,
      });
      const logRef = path.join(tmpdir(), `tributary-tx-probe-${process.pid}.log`);
      const end = await runtime.run(
        {
          stepId: 1,
          runId: "00000000-0000-0000-0000-000000000002",
          tryNumber: 1,
          assetKey: "t/probe",
          partitionKey: "",
          mapIndex: -1,
          partition: { window: null, dimensions: null },
          file: "/virtual.ts",
          exportName: "probe",
          timeoutMs: null,
          logRef,
        },
        {},
      );
      await rm(logRef, { force: true });
      expect(end.outcome).toMatchObject({ kind: "success", outputJson: JSON.stringify({ hasTx: false }) });
    });
  });

  describe("under PGlite", () => {
    it("refuses its steps, saying it needs Postgres", async () => {
      const results: StepResult[] = [];
      const backend: ExecutionBackend & { completionOf: StoreExecutionBackend["completionOf"] } = {
        loadInputs: async (steps) => new Map(steps.map((s) => [s.stepId, { ok: true as const, inputs: {} }])),
        started: async () => undefined,
        heartbeat: async () => undefined,
        finished: async (r) => {
          results.push(...r);
          return [];
        },
        addDynamicPartitions: async () => undefined,
        materialized: async () => undefined,
        completionOf: async () => {
          throw new Error("unreachable");
        },
      };
      const executor = new TransactionalExecutor(backend, {
        database: { kind: "pglite", db: undefined as never },
        runs: { completeStepsWithin: async () => ({ applied: 0, ignored: [], scheduled: 0, finishedRuns: [], claimed: [] }) },
      });
      const dispatch: StepDispatch = {
        stepId: 1,
        runId: "00000000-0000-0000-0000-000000000001",
        tryNumber: 1,
        assetKey: "tx/ledger",
        partitionKey: "",
        mapIndex: -1,
        partition: { window: null, dimensions: null },
        file: "/nowhere.ts",
        exportName: "ledger",
        timeoutMs: null,
        logRef: path.join(tmpdir(), `tributary-tx-refused-${process.pid}.log`),
      };
      executor.submit([dispatch]);
      for (let i = 0; i < 200 && results.length === 0; i++) await sleep(10);
      await executor.close({ graceMs: 1_000 });
      expect(results).toHaveLength(1);
      const outcome = results[0]!.outcome;
      expect(outcome.kind).toBe("failed");
      if (outcome.kind !== "failed") return;
      expect(outcome.error.code).toBe(TRANSACTIONAL_NEEDS_POSTGRES);
      expect(outcome.retryable).toBe(false);
      expect(outcome.error.message).toContain("DATABASE_URL");
    });
  });
});
