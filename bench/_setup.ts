// What every benchmark sets up the same way: scratch directories and Postgres databases that go when the
// benchmark ends, reconcilers and `tributary` child processes stopped then, timing and percentile helpers, and
// the one JSON object a benchmark prints.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql, type Kysely } from "kysely";
import type { Reconciler, ReconcilerOptions } from "../src/reconciler/index.js";
import type { Database, PostgresHandle } from "../src/storage/index.js";

// Storage and the reconciler are imported on first use, so that the benchmarks of pure computation (partition math,
// the automation tick) load no database modules.
const storage = () => import("../src/storage/index.js");

export const REPO_ROOT = path.resolve(import.meta.dirname, "..");
export const TRIBUTARY_BIN = path.join(REPO_ROOT, "bin/tributary.mjs");
/** The Postgres server scratch databases are made on: DATABASE_URL, else the local one. */
export const ADMIN_URL = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";

export interface BenchDatabase {
  readonly url: string;
  readonly handle: PostgresHandle;
  readonly db: Kysely<Database>;
}

/** What a benchmark set up, undone in reverse order when it ends. */
export class BenchScope {
  readonly #cleanups: (() => unknown)[] = [];

  /** Runs `cleanup` when the scope closes, before the clean-ups registered earlier. */
  onClose(cleanup: () => unknown): void {
    this.#cleanups.push(cleanup);
  }

  /** A new directory under the system's temp directory, removed with everything in it. */
  async tempDir(name: string): Promise<string> {
    const dir = await mkdtemp(path.join(tmpdir(), `tributary-bench-${name}-`));
    this.onClose(() => rm(dir, { recursive: true, force: true }));
    return dir;
  }

  /**
   * A new empty database on ADMIN_URL's server, dropped (its sessions disconnected) unless BENCH_KEEP is set (to look
   * at its plans afterwards); returns its URL.
   */
  async scratchDatabase(name: string): Promise<string> {
    const { createDatabase, databaseUrlWithName, dropDatabase } = await storage();
    const dbName = `tributary_bench_${name}_${process.pid}`;
    await createDatabase(ADMIN_URL, dbName);
    if (!process.env.BENCH_KEEP) this.onClose(() => dropDatabase(ADMIN_URL, dbName));
    return databaseUrlWithName(ADMIN_URL, dbName);
  }

  /** The database at `url`, opened and migrated; closed with the scope. */
  async postgres(url: string, maxConnections = 10): Promise<BenchDatabase> {
    const { migrate, openPostgres } = await storage();
    const handle = await openPostgres({ kind: "postgres", url, maxConnections });
    this.onClose(() => handle.close());
    await migrate(handle.db);
    return { url, handle, db: handle.db };
  }

  /** A scratch database, opened and migrated. */
  async database(name: string, maxConnections = 10): Promise<BenchDatabase> {
    return this.postgres(await this.scratchDatabase(name), maxConnections);
  }

  /** A started reconciler; when the scope closes it stops, then its executors close (1 s of grace). */
  async reconciler(options: ReconcilerOptions): Promise<Reconciler> {
    const { Reconciler } = await import("../src/reconciler/index.js");
    const reconciler = new Reconciler(options);
    this.onClose(async () => {
      await reconciler.stop();
      for (const executor of Object.values(options.executors)) await executor.close({ graceMs: 1_000 });
    });
    await reconciler.start();
    return reconciler;
  }

  /** Runs every clean-up, the latest first, even when one fails; then throws the first failure. */
  async close(): Promise<void> {
    const failures: unknown[] = [];
    for (const cleanup of this.#cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch (err) {
        failures.push(err);
      }
    }
    if (failures.length > 0) throw failures[0];
  }
}

/** Runs `body` with a fresh scope and closes the scope after, whether `body` succeeded or not. */
export async function withScope<T>(body: (scope: BenchScope) => Promise<T>): Promise<T> {
  const scope = new BenchScope();
  try {
    return await body(scope);
  } finally {
    await scope.close();
  }
}

/** Lets the default pool hold any number of steps, so that only the executors' slots limit a benchmark. */
export async function unlimitedDefaultPool(db: Kysely<Database>): Promise<void> {
  await sql`update pools set slots = 100000 where name = 'default_pool'`.execute(db);
}

/** How startTributary runs a `tributary` command and tells that it is ready. */
export interface StartOptions {
  /** Added to this process's environment. */
  readonly env?: Record<string, string>;
  /** True once the process is ready; asked every `pollMs` with the output so far. */
  readonly ready: (output: string) => boolean | Promise<boolean>;
  readonly timeoutMs?: number;
  readonly pollMs?: number;
  /** Collect stdout too (into the output `ready` sees). */
  readonly stdout?: boolean;
  /** Echo stderr, tagged, to this process's stderr. */
  readonly echo?: boolean;
}

export interface StartedProcess {
  readonly child: ChildProcess;
  /** Everything the process wrote so far (stderr, and stdout when collected). */
  output(): string;
}

/**
 * `tributary <argv>` (bin/tributary.mjs) in a child process from the repository root, stderr collected, once `ready`
 * says so; fails (and stops it) when it exits first or is not ready within `timeoutMs` (default 60 s).
 */
export async function startTributary(argv: readonly string[], options: StartOptions): Promise<StartedProcess> {
  const child = spawn(process.execPath, [TRIBUTARY_BIN, ...argv], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...options.env },
    stdio: ["ignore", options.stdout ? "pipe" : "ignore", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr!.on("data", (d: Buffer) => {
    output += d.toString();
    if (options.echo) process.stderr.write(`[${argv[0]}] ${d.toString()}`);
  });
  const started = { child, output: () => output };
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  try {
    while (!(await options.ready(output))) {
      if (child.exitCode !== null) throw new Error(`tributary ${argv[0]} exited with ${child.exitCode} before it was ready:\n${output}`);
      if (Date.now() > deadline) throw new Error(`tributary ${argv[0]} was not ready in time:\n${output}`);
      await sleep(options.pollMs ?? 50);
    }
  } catch (err) {
    await stopProcess(child);
    throw err;
  }
  return started;
}

/** True once `url` answers with a 2xx status. */
export const answers = (url: string) => (): Promise<boolean> =>
  fetch(url).then(
    (r) => r.ok,
    () => false,
  );

/** Sends `signal` and waits for the process to exit; with `killAfterMs`, kills it if it has not by then. */
export async function stopProcess(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM", killAfterMs?: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill(signal);
  const killer = killAfterMs === undefined ? undefined : setTimeout(() => child.kill("SIGKILL"), killAfterMs);
  await exited;
  clearTimeout(killer);
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `work` and times it (performance.now()). */
export async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}

/** Rounded to one decimal; null stays null. */
export function round1(n: number): number;
export function round1(n: number | null): number | null;
export function round1(n: number | null): number | null {
  return n === null ? null : Math.round(n * 10) / 10;
}

/** The values, lowest first. */
export const ascending = (values: readonly number[]): number[] => [...values].sort((a, b) => a - b);

/** The nearest-rank percentile (q in (0, 1]) of values sorted lowest first: the ⌈q·n⌉-th value. */
export const nearestRank = (sorted: readonly number[], q: number): number | undefined =>
  sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];

/** The value ⌊q·n⌋ places from the lowest of values sorted lowest first (q = 0.5: the upper median). */
export const floorRank = (sorted: readonly number[], q: number): number | undefined =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

/** p50, p95 and max (nearest rank) rounded to one decimal. */
export function p50p95max(values: readonly number[]): { p50: number; p95: number; max: number } {
  const sorted = ascending(values);
  const pick = (q: number) => round1(nearestRank(sorted, q)!);
  return { p50: pick(0.5), p95: pick(0.95), max: pick(1) };
}

/** Prints a benchmark's result: one JSON object on stdout (on one line unless `indent` is given). */
export function printResult(result: object, indent?: number): void {
  process.stdout.write(`${JSON.stringify(result, null, indent)}\n`);
}
