// The deployment the fault scenarios break: a private Postgres cluster and Redis server, `tributary api`, two
// `tributary reconciler`s, a `tributary triggerer` and a `tributary worker`, all real processes. Every time user
// code runs it appends a line to a ledger, so a scenario can count the steps whose code ran twice.
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import S3rver from "s3rver";
import { expect } from "vitest";
import { CLI_COMMAND_BUDGET_MS, eventually, freePort, startCli } from "../cli/run-cli.js";
import { startPrivatePostgres, startPrivateRedis, type PrivatePostgres, type PrivateRedis } from "../support/private-services.js";

const BUCKET = "tributary-outputs";

/** An S3-compatible object store in this process (s3rver), which a scenario stops and starts on the same port. */
export class ObjectStore {
  #server: S3rver | undefined;
  private constructor(
    readonly port: number,
    readonly dir: string,
  ) {}

  static async start(dir: string): Promise<ObjectStore> {
    const store = new ObjectStore(freePort(), dir);
    await store.start();
    const client = new S3Client({
      endpoint: store.endpoint,
      region: "us-east-1",
      forcePathStyle: true,
      credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
    });
    await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    client.destroy();
    return store;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** What the fleet's processes are told: outputs over the inline limit go here. */
  get env(): Record<string, string> {
    return {
      TRIBUTARY_S3_BUCKET: BUCKET,
      TRIBUTARY_S3_ENDPOINT: this.endpoint,
      TRIBUTARY_S3_FORCE_PATH_STYLE: "true",
      TRIBUTARY_S3_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "S3RVER",
      AWS_SECRET_ACCESS_KEY: "S3RVER",
    };
  }

  async start(): Promise<void> {
    this.#server = new S3rver({ address: "127.0.0.1", port: this.port, silent: true, directory: this.dir });
    await this.#server.run();
  }

  async stop(): Promise<void> {
    await this.#server?.close().catch(() => undefined);
    this.#server = undefined;
  }
}

/**
 * How long each fault lasts. `npm run faults` sets TRIBUTARY_FAULT_SUITE=full for the durations the reliability figures
 * are recorded with; inside `npm test` they are shorter, so the suite stays within the test run's budget.
 */
export const FULL = process.env.TRIBUTARY_FAULT_SUITE === "full";
export const FAULT_MS = {
  redisDown: FULL ? 30_000 : 8_000,
  apiDown: FULL ? 20_000 : 8_000,
  openTransaction: FULL ? 600_000 : 15_000,
  objectStoreDown: FULL ? 30_000 : 8_000,
  /** A failed-over database's standby, already at the primary's address, until it is promoted. */
  readOnly: FULL ? 10_000 : 3_000,
};
/** Partitions of each asset a scenario's run materialises, and how long each step sleeps. */
export const PARTITIONS = 24;
export const STEP_MS = 300;
/** Triggers the triggerer holds when it is killed. */
export const TRIGGERS = FULL ? 1_000 : 200;

const DEFS = (ledger: string, landing: string) => `
import { appendFileSync } from "node:fs";
import { allPartitions, asset, dep, eager, fileExists, staticPartitions } from "tributary";
const keys = staticPartitions(Array.from({ length: ${PARTITIONS} }, (_, i) => "p" + String(i).padStart(2, "0")));
const many = staticPartitions(Array.from({ length: ${TRIGGERS} }, (_, i) => "t" + String(i).padStart(4, "0")));
const ran = (ctx) => appendFileSync(${JSON.stringify(ledger)}, JSON.stringify({ run: ctx.run.id, asset: ctx.assetKey,
  partition: ctx.partition?.key ?? "", try: ctx.tryNumber, at: Date.now(), pid: process.pid }) + "\\n");
const work = (ctx) => { ran(ctx); return new Promise((r) => setTimeout(() => r(ctx.partition.key), ${STEP_MS})); };
export const local = asset({ key: "f/local", partitions: keys }, work);
export const fleet = asset({ key: "f/fleet", partitions: keys, executor: "bullmq" }, work);
export const total = asset({ key: "f/total", deps: { local: dep(local, allPartitions()) } }, async (ctx, { local }) => {
  ran(ctx);
  return local.length;
});
// Dataset-driven automation: a new f/total starts a run of this one.
export const downstream = asset({ key: "f/downstream", deps: { total }, automation: eager() }, async (ctx, { total }) => {
  ran(ctx);
  return total;
});
// Outputs over the inline limit: written to the object store.
export const big = asset({ key: "f/big", partitions: keys }, async (ctx) => {
  ran(ctx);
  await new Promise((r) => setTimeout(r, ${STEP_MS}));
  return { blob: "x".repeat(80 * 1024) };
});
// Exactly once: its row in tx_ledger commits with the step's success, or not at all.
export const tx = asset({ key: "f/tx", partitions: keys, executor: "transactional" }, async (ctx) => {
  ran(ctx);
  await new Promise((r) => setTimeout(r, ${STEP_MS}));
  await ctx.tx.insertInto("tx_ledger").values({ run: ctx.run.id, partition: ctx.partition.key, try: ctx.tryNumber }).execute();
  return ctx.partition.key;
});
export const landing = asset({ key: "f/landing", partitions: many }, async (ctx) => {
  const file = await ctx.defer(fileExists(${JSON.stringify(landing)} + "/{partition}.csv"), { timeout: "1h", interval: "1s" });
  ran(ctx);
  return file.size;
});
`;

export interface LedgerLine {
  readonly run: string;
  readonly asset: string;
  readonly partition: string;
  readonly try: number;
  readonly at: number;
}

/** What one scenario prints, as one JSON line, and what docs/reliability.md records. */
export interface FaultReport {
  readonly scenario: string;
  readonly runsSucceeded: number;
  readonly runs: number;
  /** Steps whose user code ran more than once (at-least-once where the docs say so). */
  readonly stepsRunTwice: number;
  /** Transactional steps whose writes committed more than once (exactly once: always 0); left out without any. */
  readonly committedTwice?: number;
  /** From the fault's end to the first step finishing after it, in seconds. */
  readonly progressAfterS: number;
  readonly faultS: number;
}

type Proc = ReturnType<typeof startCli>;

export class Fleet {
  readonly procs = new Map<string, Proc>();
  private constructor(
    readonly pg: PrivatePostgres,
    readonly redis: PrivateRedis,
    readonly objects: ObjectStore,
    readonly dir: string,
    readonly apiPort: number,
  ) {}

  get ledgerFile(): string {
    return path.join(this.dir, "ledger.jsonl");
  }

  get landingDir(): string {
    return path.join(this.dir, "landing");
  }

  get apiUrl(): string {
    return `http://127.0.0.1:${this.apiPort}`;
  }

  static async start(): Promise<Fleet> {
    const [pg, redis] = await Promise.all([startPrivatePostgres(), startPrivateRedis()]);
    const dir = await mkdtemp(path.join(tmpdir(), "tributary-faults-"));
    await mkdir(path.join(dir, "objects"));
    const fleet = new Fleet(pg, redis, await ObjectStore.start(path.join(dir, "objects")), dir, freePort());
    await mkdir(path.join(dir, "defs"));
    await mkdir(fleet.landingDir);
    try {
      // What transactional steps write, in the metadata database, through ctx.tx.
      await pg.query("create table tx_ledger (run text not null, partition text not null, try int not null)", [], "tributary");
      await writeFile(path.join(dir, "defs", "faults.ts"), DEFS(fleet.ledgerFile, fleet.landingDir));
      await fleet.startProc("api");
      await Promise.all([
        fleet.startProc("reconciler-1"),
        fleet.startProc("reconciler-2"),
        fleet.startProc("triggerer"),
        fleet.startProc("worker"),
      ]);
    } catch (err) {
      // A fleet that could not start leaves no cluster, server or process behind.
      await fleet.stop();
      throw err;
    }
    return fleet;
  }

  /** Starts (or starts again) one of the fleet's processes; resolves once it says it is running. */
  async startProc(name: string): Promise<Proc> {
    const env = { DATABASE_URL: this.pg.url(), REDIS_URL: this.redis.url, NO_COLOR: "1", ...this.objects.env };
    const common = ["--definitions", path.join(this.dir, "defs"), "--data-dir", path.join(this.dir, name)];
    const kind = name.replace(/-\d+$/, "");
    const args: Record<string, string[]> = {
      api: ["api", "--insecure-no-auth", "--port", String(this.apiPort)],
      // A dead reconciler's steps: running ones are noticed by their heartbeat, queued ones by the queued timeout.
      reconciler: ["reconciler", "--processes", "1", "--zombie-after", "10s", "--queued-timeout", "60s", "--presumed-dead-after", "8s"],
      triggerer: ["triggerer", "--lease", "10s"],
      // The worker reports through the API: it has no database credentials.
      worker: ["worker", "--url", this.apiUrl, "--processes", "1"],
    };
    const ready: Record<string, RegExp> = {
      api: /serving the API at/,
      reconciler: /reconciler \S+ is running/,
      triggerer: /triggerer \S+ is running/,
      worker: /takes steps from queue/,
    };
    const proc = startCli([...args[kind]!, ...common], { env: kind === "worker" ? { ...env, DATABASE_URL: "" } : env });
    this.procs.set(name, proc);
    const state = await eventually(
      async () => (proc.exitCode !== null ? "exited" : ready[kind]!.test(proc.output()) ? "ready" : undefined),
      CLI_COMMAND_BUDGET_MS,
      () => `${name} to start:\n${proc.output()}`,
    );
    if (state === "exited") throw new Error(`${name} exited with ${proc.exitCode} before it was ready:\n${proc.output()}`);
    return proc;
  }

  /** SIGKILL, as the OOM killer or a lost host would. */
  async kill(name: string): Promise<void> {
    const proc = this.procs.get(name);
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once("exit", r));
    proc.kill("SIGKILL");
    await exited;
  }

  /** The processes that ended although nobody stopped them, with their output. */
  exited(): string[] {
    return [...this.procs]
      .filter(([, p]) => p.exitCode !== null || p.signalCode !== null)
      .map(([n, p]) => `${n} (${p.exitCode ?? p.signalCode}):\n${p.output()}`);
  }

  output(name: string): string {
    return this.procs.get(name)?.output() ?? "";
  }

  /** Launches a run through the API's GraphQL, asking again while the API is away. */
  async launch(input: Record<string, unknown>): Promise<string> {
    return eventually(
      async () => {
        const res = await fetch(`${this.apiUrl}/graphql`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ query: "mutation($input: LaunchRunInput!) { launchRun(input: $input) { id } }", variables: { input } }),
        });
        const body = (await res.json()) as { data?: { launchRun: { id: string } | null }; errors?: { message: string }[] };
        if (body.errors?.length) throw new Error(body.errors.map((e) => e.message).join("; "));
        return body.data?.launchRun?.id;
      },
      CLI_COMMAND_BUDGET_MS,
      "the API to launch a run",
    );
  }

  /** Polls `check` until it returns a value (a scenario's own conditions), naming what it waited for on failure. */
  until<T>(check: () => Promise<T | undefined | false>, what: string | (() => string), timeoutMs = 240_000): Promise<T> {
    return eventually(
      async () => (await check()) || undefined,
      timeoutMs,
      () => `${typeof what === "function" ? what() : what}; processes that exited: ${this.exited().join("\n") || "none"}`,
    ) as Promise<T>;
  }

  async runStatuses(ids: readonly string[]): Promise<Map<string, string>> {
    const rows = await this.pg.query<{ id: string; status: string }>(
      "select id::text, status from runs where id = any($1::uuid[])",
      [ids],
      "tributary",
    );
    return new Map(rows.map((r) => [r.id, r.status]));
  }

  /** Waits until every run has ended; returns how many succeeded. */
  async waitForRuns(ids: readonly string[], timeoutMs = 240_000): Promise<number> {
    const statuses = await eventually(
      async () => {
        const s = await this.runStatuses(ids).catch(() => undefined);
        return s && ids.every((id) => ["success", "failed", "canceled"].includes(s.get(id) ?? "")) ? s : undefined;
      },
      timeoutMs,
      () => `runs ${ids.join(", ")} to end; processes that exited: ${this.exited().join("\n") || "none"}`,
    );
    return ids.filter((id) => statuses.get(id) === "success").length;
  }

  /** Why the steps of these runs that did not succeed ended as they did. */
  async failures(ids: readonly string[]): Promise<string> {
    const rows = await this.pg.query<{ asset_key: string; partition_key: string; state: string; error: unknown }>(
      "select asset_key, partition_key, state, error from steps where run_id = any($1::uuid[]) and state <> 'success'",
      [ids],
      "tributary",
    );
    return JSON.stringify(rows.slice(0, 10));
  }

  async ledger(): Promise<LedgerLine[]> {
    const text = await readFile(this.ledgerFile, "utf8").catch(() => "");
    return text
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as LedgerLine);
  }

  /** Steps of these runs (of every asset but `except`) whose user code ran more than once. */
  async stepsRunTwice(ids: readonly string[], except: readonly string[] = []): Promise<number> {
    const counts = new Map<string, number>();
    for (const l of await this.ledger()) {
      if (!ids.includes(l.run) || except.includes(l.asset)) continue;
      const k = `${l.run}|${l.asset}|${l.partition}`;
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    return [...counts.values()].filter((n) => n > 1).length;
  }

  /** Transactional steps of these runs whose writes through ctx.tx committed more than once (exactly once: none). */
  async committedTwice(ids: readonly string[]): Promise<number> {
    const rows = await this.pg.query<{ n: number }>(
      `select count(*)::int as n from (select 1 from tx_ledger where run = any($1::text[]) group by run, partition having count(*) > 1) t`,
      [ids],
      "tributary",
    );
    return rows[0]?.n ?? 0;
  }

  /** Transactional steps of these runs whose writes committed (once or more). */
  async committed(ids: readonly string[]): Promise<number> {
    const rows = await this.pg.query<{ n: number }>(
      "select count(distinct (run, partition))::int as n from tx_ledger where run = any($1::text[])",
      [ids],
      "tributary",
    );
    return rows[0]?.n ?? 0;
  }

  /** Seconds from `since` to the first try (of `asset`, or any) that ended successfully after it (waits for one). */
  async progressAfter(since: number, asset?: string): Promise<number> {
    const at = await eventually(
      async () => {
        const rows = await this.pg
          .query<{ at: Date | null }>(
            `select min(t.ended_at) as at from step_tries t join steps s on s.id = t.step_id
             where t.state = 'success' and t.ended_at > $1 ${asset ? "and s.asset_key = $2" : ""}`,
            asset ? [new Date(since), asset] : [new Date(since)],
            "tributary",
          )
          .catch(() => [{ at: null }]);
        return rows[0]?.at ?? undefined;
      },
      240_000,
      () => `a step to finish after the fault; processes that exited: ${this.exited().join("\n") || "none"}`,
    );
    return Math.max(0, (at.getTime() - since) / 1000);
  }

  /**
   * One scenario: launches `launch`, waits until its user code ran `underWay` times, runs `fault` (which may launch
   * runs of its own and return them), then measures the time from the fault's end to a step (of `progressOf`, or any)
   * finishing, waits for every run, prints the figures and expects every run to have succeeded. Returns the runs.
   */
  async underFault(options: {
    readonly scenario: string;
    readonly launch: Record<string, unknown>;
    readonly underWay: number;
    readonly fault: () => Promise<readonly string[] | void>;
    readonly progressOf?: string;
  }): Promise<string[]> {
    const runs = [await this.launch(options.launch)];
    await this.until(
      async () => (await this.ledger()).filter((l) => l.run === runs[0]).length >= options.underWay,
      "the run to be under way",
    );
    const started = Date.now();
    runs.push(...((await options.fault()) ?? []));
    const ended = Date.now();
    const progressAfterS = await this.progressAfter(ended, options.progressOf);
    const succeeded = await this.waitForRuns(runs);
    const transactional = (await this.committed(runs)) > 0;
    const committedTwice = transactional ? await this.committedTwice(runs) : undefined;
    report({
      scenario: options.scenario,
      runsSucceeded: succeeded,
      runs: runs.length,
      stepsRunTwice: await this.stepsRunTwice(runs),
      ...(committedTwice !== undefined ? { committedTwice } : {}),
      progressAfterS,
      faultS: (ended - started) / 1000,
    });
    expect(succeeded, await this.failures(runs)).toBe(runs.length);
    expect(committedTwice ?? 0, "transactional steps whose writes committed twice").toBe(0);
    return runs;
  }

  async stop(): Promise<void> {
    for (const name of this.procs.keys()) await this.kill(name);
    await this.redis.stop();
    await this.objects.stop();
    await this.pg.destroy();
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** Prints the scenario's figures as one JSON line (`npm run faults` collects them for docs/reliability.md). */
export function report(r: FaultReport): void {
  process.stdout.write(`${JSON.stringify({ fault: r })}\n`);
}
