import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { seedDataDir } from "../support/data-dir-template.js";

export const ROOT = path.resolve(import.meta.dirname, "../..");
const BIN = path.join(ROOT, "bin/tributary.mjs");

/**
 * What one CLI command may take. Quiet, a few seconds; but each is a Node process that compiles the sources, loads the
 * definitions in a child process and starts the embedded database, and a loaded 2-core machine has taken over a
 * minute and a half for one.
 */
export const CLI_COMMAND_BUDGET_MS = 180_000;

/** What `tributary dev` may take to serve its definitions on a loaded machine (a fresh data directory included). */
export const DEV_START_BUDGET_MS = 300_000;

/** A test's timeout when it runs `commands` CLI commands one after another, with a margin for its own work. */
export function cliBudget(commands: number): number {
  return commands * CLI_COMMAND_BUDGET_MS + 30_000;
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `tributary …` as a real child process, the way a user does; `input` is piped to its standard input. */
export function runCli(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number; input?: string } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd ?? ROOT,
      env: { ...process.env, NO_COLOR: "1", DATABASE_URL: "", ...options.env },
      stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    if (options.input !== undefined) child.stdin!.end(options.input);
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? CLI_COMMAND_BUDGET_MS);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Starts a long-running command (e.g. `dev`) and returns the process. */
export function startCli(args: string[], options: { env?: NodeJS.ProcessEnv } = {}): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: "1", DATABASE_URL: "", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  return Object.assign(child, { output: () => output });
}

/** The port a started `dev` (with `--port 0`) says it serves on, once it does; fails when the process exits first. */
export function listeningPort(child: ChildProcess & { output: () => string }, timeoutMs = DEV_START_BUDGET_MS): Promise<number> {
  return eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`tributary dev exited:\n${child.output()}`);
      return Number(/serving UI and GraphQL at http:\/\/[^:]+:(\d+)/.exec(child.output())?.[1]) || undefined;
    },
    timeoutMs,
    "tributary dev to listen",
  );
}

export async function graphqlAt<T>(
  port: number,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<{ data?: T; errors?: { message: string; extensions?: { code?: string } }[] }> {
  const res = await fetch(`http://127.0.0.1:${port}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ query, variables }),
  });
  return (await res.json()) as { data?: T; errors?: { message: string; extensions?: { code?: string } }[] };
}

/**
 * Polls until `check` returns a value, or fails after `timeoutMs`. `what` names the condition; as a function it is
 * read at the failure, so it can hold what a child process printed meanwhile.
 */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 60_000,
  what: string | (() => string) = "condition",
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `timed out waiting for ${typeof what === "function" ? what() : what}${lastError ? `: ${(lastError as Error).message}` : ""}`,
  );
}

/** Ports below the kernel's ephemeral range (32768–60999 here), so no outgoing connection or `port: 0` server holds one. */
const PORT_FLOOR = 10_000;
const PORTS_PER_WORKER = 2_500;
let nextPort = Math.floor(Math.random() * PORTS_PER_WORKER);

/**
 * A port for a server a test starts. Each vitest worker draws from its own block and walks it in turn, so two suites
 * running side by side never pick the same one.
 */
export function freePort(): number {
  const worker = Number(process.env.VITEST_POOL_ID ?? 1) % 8;
  nextPort = (nextPort + 1 + Math.floor(Math.random() * 7)) % PORTS_PER_WORKER;
  return PORT_FLOOR + worker * PORTS_PER_WORKER + nextPort;
}

export interface DevServer {
  readonly port: number;
  readonly url: string;
  output(): string;
  stop(): Promise<void>;
}

export interface DevOptions {
  dataDir?: string;
  /**
   * Start from a copy of the migrated embedded database when `dataDir` has none yet. Leave it off where the test is
   * about what a first start does to an empty data directory.
   */
  seed?: boolean;
  databaseUrl?: string;
  definitionsDir?: string;
  processes?: number;
  env?: NodeJS.ProcessEnv;
}

/**
 * `tributary dev` on the given definitions (default: the demo in asset-definitions/), with the embedded database in
 * `dataDir` or with Postgres at `databaseUrl`. Resolves once GraphQL answers with the definitions loaded.
 */
export async function startDev(options: DevOptions): Promise<DevServer> {
  // Copying the migrated embedded database saves the minutes a first start can take on a loaded machine.
  if (options.seed && options.dataDir && !existsSync(path.join(options.dataDir, "db"))) await seedDataDir(options.dataDir);
  // Without one, a data directory of its own (the steps' logs go there), removed when the server stops: never the
  // checkout's .tributary, which other suites' servers would share.
  const ownDataDir = options.dataDir ? undefined : await mkdtemp(path.join(tmpdir(), "tributary-dev-"));
  const withDataDir = ownDataDir ? { ...options, dataDir: ownDataDir } : options;
  // A random port can be taken by another suite's server: another one then.
  for (let attempt = 1; ; attempt++) {
    try {
      const dev = await startDevOn(freePort(), withDataDir);
      if (!ownDataDir) return dev;
      return {
        ...dev,
        stop: async () => {
          await dev.stop();
          await rm(ownDataDir, { recursive: true, force: true });
        },
      };
    } catch (err) {
      if (attempt >= 3 || !/already in use/.test((err as Error).message)) {
        if (ownDataDir) await rm(ownDataDir, { recursive: true, force: true });
        throw err;
      }
    }
  }
}

async function startDevOn(port: number, options: DevOptions): Promise<DevServer> {
  const args = [
    "dev",
    "--port",
    String(port),
    "--definitions",
    options.definitionsDir ?? path.join(ROOT, "asset-definitions"),
    "--processes",
    String(options.processes ?? 1),
  ];
  if (options.dataDir) args.push("--data-dir", options.dataDir);
  const child = startCli(args, { env: { ...options.env, ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}) } });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  // Serving, or exited (a taken port, a crash): whichever comes first, with the process's output when it failed.
  const serving = eventually(
    async () => {
      const r = await graphqlAt<{ definitionsVersion: { version: number } | null }>(port, "{ definitionsVersion { version } }");
      return r.data?.definitionsVersion ? true : undefined;
    },
    DEV_START_BUDGET_MS,
    "tributary dev to serve its definitions",
  );
  const died = exited.then(() => {
    throw new Error(`tributary dev exited with ${child.exitCode}:\n${child.output()}`);
  });
  try {
    await Promise.race([serving, died]);
  } catch (err) {
    child.kill("SIGKILL");
    throw new Error(`${(err as Error).message}\n${child.output()}`);
  } finally {
    died.catch(() => undefined);
    serving.catch(() => undefined);
  }
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    output: () => child.output(),
    stop: async () => {
      if (child.exitCode === null) {
        child.kill("SIGINT");
        // A loaded machine can take a while to stop the workers and close the database cleanly.
        const killer = setTimeout(() => child.kill("SIGKILL"), 60_000);
        await exited;
        clearTimeout(killer);
      }
    },
  };
}

/**
 * `tributary api` (access control on unless `--insecure-no-auth` is in `args`) over the Postgres database at
 * `databaseUrl`, which must hold the definitions and, with access control, an admin. Resolves once it listens.
 */
export async function startApi(options: { databaseUrl: string; args?: readonly string[]; env?: NodeJS.ProcessEnv }): Promise<DevServer> {
  const child = startCli(["api", "--port", "0", ...(options.args ?? [])], { env: { ...options.env, DATABASE_URL: options.databaseUrl } });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const listening = eventually(
    async () => Number(/serving the API at http:\/\/127\.0\.0\.1:(\d+)/.exec(child.output())?.[1]) || undefined,
    CLI_COMMAND_BUDGET_MS,
    () => `tributary api to listen\n${child.output()}`,
  );
  const died = exited.then(() => {
    throw new Error(`tributary api exited with ${child.exitCode}:\n${child.output()}`);
  });
  let port: number;
  try {
    port = await Promise.race([listening, died]);
  } catch (err) {
    child.kill("SIGKILL");
    throw err;
  } finally {
    died.catch(() => undefined);
    listening.catch(() => undefined);
  }
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    output: () => child.output(),
    stop: async () => {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        const killer = setTimeout(() => child.kill("SIGKILL"), 60_000);
        await exited;
        clearTimeout(killer);
      }
    },
  };
}

/**
 * Two definitions files in `dir`: good.ts (asset t/good, daily) that loads, and bad.ts (asset t/bad) whose partitions
 * name a time zone that does not exist, so it fails to load.
 */
export async function writeGoodAndBadDefinitions(dir: string): Promise<void> {
  await writeFile(
    path.join(dir, "good.ts"),
    `import { asset, daily } from "tributary";\nexport const good = asset({ key: "t/good", partitions: daily({ start: "2025-01-01" }) }, async () => 1);\n`,
  );
  await writeFile(
    path.join(dir, "bad.ts"),
    `import { asset, daily } from "tributary";\nexport const bad = asset({ key: "t/bad", partitions: daily({ start: "2025-01-01", timezone: "Mars/Olympus" }) }, async () => 1);\n`,
  );
}
