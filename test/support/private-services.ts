// A Postgres cluster and a Redis server of a test's own, on free ports, which it may stop, restart and kill
// without touching the shared services. Postgres refuses to run as root: as root the cluster belongs to an
// unprivileged system user created for it.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { chmod, chown, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { existsSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { freePort } from "../cli/run-cli.js";

const run = promisify(execFile);

/** The system user that owns private clusters when the tests run as root. */
const CLUSTER_USER = "tributary-faults";

export interface PrivatePostgres {
  readonly port: number;
  /** A connection URL for `database` on this cluster (default: `tributary`, created at start). */
  url(database?: string): string;
  /** `pg_ctl restart -m fast`: every session ends, the server is back when it resolves. */
  restart(): Promise<void>;
  stop(): Promise<void>;
  start(): Promise<void>;
  /**
   * A failover to a promoted standby at the same address, as a managed service or a floating address gives one: a
   * streaming standby is made (pg_basebackup) and caught up, the primary is shut down cleanly (every commit reaches
   * the standby), the standby takes over the primary's port still in recovery, so for `readOnlyMs` every write is
   * refused as read-only (25006), and is then promoted. From then on the standby is this cluster.
   */
  failover(options: { readOnlyMs: number }): Promise<void>;
  /** Ends every session but this helper's own (pg_terminate_backend), in all databases. Returns how many. */
  terminateSessions(): Promise<number>;
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[], database?: string): Promise<R[]>;
  /** Stops the server and removes its directory. */
  destroy(): Promise<void>;
}

function pgBinDir(): string {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) if (existsSync(path.join(root, v, "bin", "pg_ctl"))) return path.join(root, v, "bin");
  throw new Error(`no Postgres server binaries under ${root} (initdb, pg_ctl): install postgresql`);
}

async function asClusterUser(command: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  if (process.getuid?.() !== 0) return run(command, args);
  return run("runuser", ["-u", CLUSTER_USER, "--", command, ...args]);
}

async function ensureClusterUser(): Promise<void> {
  if (process.getuid?.() !== 0) return;
  const exists = await run("id", ["-u", CLUSTER_USER]).then(
    () => true,
    () => false,
  );
  if (!exists) {
    await run("useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", CLUSTER_USER]).catch((err: unknown) => {
      // Two suites creating it at once: the other one won.
      if (!/already exists/.test((err as { stderr?: string }).stderr ?? "")) throw err;
    });
  }
}

/** Initialises a cluster in a temporary directory, starts it and creates the `tributary` database. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = pgBinDir();
  await ensureClusterUser();
  const dir = await mkdtemp(path.join(tmpdir(), "tributary-pg-"));
  await chmod(dir, 0o755);
  if (process.getuid?.() === 0) {
    const { stdout } = await run("id", ["-u", CLUSTER_USER]);
    const { stdout: gid } = await run("id", ["-g", CLUSTER_USER]);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  // The cluster's data directory: the standby's once a failover has promoted it.
  let data = path.join(dir, "data");
  await asClusterUser(path.join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
  const port = freePort();
  const optionsOn = (p: number) => `-p ${p} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
  const options = optionsOn(port);
  const pgCtlOn = (dataDir: string, ...args: string[]) =>
    asClusterUser(path.join(bin, "pg_ctl"), ["-D", dataDir, "-l", path.join(dir, "server.log"), ...args]);
  const pgCtl = (...args: string[]) => pgCtlOn(data, ...args);
  const url = (database = "tributary") => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const query = async <R extends pg.QueryResultRow>(text: string, values: unknown[] = [], database = "postgres"): Promise<R[]> => {
    const client = new pg.Client({ connectionString: url(database) });
    await client.connect();
    try {
      return (await client.query<R>(text, values)).rows;
    } finally {
      await client.end();
    }
  };
  const start = async () => {
    await pgCtl("-w", "-t", "120", "-o", options, "start");
  };
  await start();
  await query("create database tributary");
  return {
    port,
    url,
    query,
    start,
    stop: async () => {
      await pgCtl("-w", "-t", "120", "-m", "fast", "stop");
    },
    restart: async () => {
      await pgCtl("-w", "-t", "120", "-m", "fast", "-o", options, "restart");
    },
    failover: async ({ readOnlyMs }) => {
      const standby = path.join(dir, `standby-${Date.now()}`);
      const standbyPort = freePort();
      await asClusterUser(path.join(bin, "pg_basebackup"), [
        ...["-D", standby, "-R", "-X", "stream", "-c", "fast", "--no-sync"],
        ...["-h", "127.0.0.1", "-p", String(port), "-U", "postgres"],
      ]);
      await pgCtlOn(standby, "-w", "-t", "120", "-o", optionsOn(standbyPort), "start");
      const streaming = async () =>
        (await query<{ n: number }>("select count(*)::int as n from pg_stat_replication where state = 'streaming'"))[0]?.n === 1;
      for (let i = 0; !(await streaming()); i++) {
        if (i > 600) throw new Error("the standby did not start streaming from the primary");
        await new Promise((r) => setTimeout(r, 50));
      }
      // A clean shutdown sends the standby every last record before the primary exits.
      await pgCtl("-w", "-t", "120", "-m", "fast", "stop");
      await pgCtlOn(standby, "-w", "-t", "120", "-m", "fast", "stop");
      // The standby takes the primary's address; with the primary gone it has nothing to stream from.
      const autoConf = path.join(standby, "postgresql.auto.conf");
      const conf = await readFile(autoConf, "utf8");
      await writeFile(autoConf, conf.replace(/^primary_conninfo\b.*$/m, ""));
      data = standby;
      await start();
      await new Promise((r) => setTimeout(r, readOnlyMs));
      await pgCtl("-w", "-t", "120", "promote");
    },
    terminateSessions: async () => {
      const rows = await query<{ n: number }>(
        "select count(*) filter (where pg_terminate_backend(pid))::int as n from pg_stat_activity where pid <> pg_backend_pid() and backend_type = 'client backend'",
      );
      return rows[0]?.n ?? 0;
    },
    destroy: async () => {
      await pgCtl("-w", "-t", "60", "-m", "immediate", "stop").catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface PrivateRedis {
  readonly url: string;
  readonly port: number;
  /** SIGKILL: nothing is saved, so the next start is empty. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

/** A redis-server of this test's own (no persistence: a restart loses every job). */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = freePort();
  let proc: ChildProcess | undefined;
  const start = async () => {
    proc = spawn("redis-server", ["--port", String(port), "--save", "", "--appendonly", "no", "--bind", "127.0.0.1"], { stdio: "ignore" });
    for (let i = 0; i < 200; i++) {
      const ok = await new Promise<boolean>((resolve) => {
        const ping = spawn("redis-cli", ["-p", String(port), "ping"], { stdio: ["ignore", "pipe", "ignore"] });
        let out = "";
        ping.stdout.on("data", (d: Buffer) => (out += d.toString()));
        ping.on("close", () => resolve(out.includes("PONG")));
      });
      if (ok) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`redis-server on port ${port} did not start`);
  };
  const stop = async () => {
    const p = proc;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((r) => p.once("exit", r));
    p.kill("SIGKILL");
    await exited;
  };
  await start();
  return { url: `redis://127.0.0.1:${port}`, port, start, stop };
}
