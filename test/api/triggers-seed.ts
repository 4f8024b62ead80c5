// Triggers in every status for the trigger read tests (API and CLI), written with SQL, and a server reading them.
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql, type Kysely } from "kysely";
import type { Database } from "../../src/storage/index.js";
import { eventually, freePort, graphqlAt, ROOT } from "../cli/run-cli.js";

/** Far enough ahead that no triggerer running beside a test checks or expires these. */
export const LATER = new Date("2099-01-01T00:00:00.000Z");
export const CHECKED_AT = new Date("2025-03-01T06:00:00.000Z");

export interface SeededTriggers {
  readonly runId: string;
  /** feed/clean 2025-03-01 (deferred twice: its older trigger fired), feed/clean 2025-03-02 (deferred), feed/report (resumed, succeeded). */
  readonly steps: { readonly first: number; readonly second: number; readonly report: number };
  /** Trigger ids by name, in insertion order. */
  readonly ids: Readonly<Record<TriggerName, number>>;
}

export type TriggerName = "olderFirst" | "first" | "second" | "report" | "feed01" | "feed28" | "feed27" | "feed26" | "api";

interface Row {
  name: TriggerName;
  kind: string;
  args: Record<string, unknown>;
  step?: keyof SeededTriggers["steps"];
  asset?: [string, string | null];
  status: string;
  attempts?: number;
  lastResult?: unknown;
  error?: unknown;
  payload?: unknown;
  window?: { start: string; end: string };
}

const ROWS: Row[] = [
  {
    name: "olderFirst",
    kind: "at",
    args: { at: "2025-03-01T00:00:00.000Z" },
    step: "first",
    status: "fired",
    attempts: 1,
    payload: { at: "2025-03-01T00:00:00.000Z" },
  },
  {
    name: "first",
    kind: "fileExists",
    args: { path: "/in/{partition}.csv" },
    step: "first",
    status: "waiting",
    attempts: 3,
    lastResult: { detail: "/in/2025-03-01.csv does not exist" },
    window: { start: "2025-03-01T00:00:00.000Z", end: "2025-03-02T00:00:00.000Z" },
  },
  { name: "second", kind: "fileExists", args: { path: "/in/{start}.csv" }, step: "second", status: "waiting" },
  {
    name: "report",
    kind: "assetMaterialized",
    args: { assetKey: "feed/clean", partition: "2025-03-01" },
    step: "report",
    status: "fired",
    attempts: 2,
    payload: { eventId: 7 },
  },
  {
    name: "feed01",
    kind: "fileExists",
    args: { path: "/partner/{partition}/_SUCCESS" },
    asset: ["partner/feed", "2025-03-01"],
    status: "waiting",
    attempts: 5,
  },
  {
    name: "feed28",
    kind: "fileExists",
    args: { path: "/partner/{partition}/_SUCCESS" },
    asset: ["partner/feed", "2025-02-28"],
    status: "fired",
    attempts: 4,
    payload: { size: 10 },
  },
  {
    name: "feed27",
    kind: "fileExists",
    args: { path: "/partner/{partition}/_SUCCESS" },
    asset: ["partner/feed", "2025-02-27"],
    status: "timed_out",
    attempts: 9,
  },
  {
    name: "feed26",
    kind: "fileExists",
    args: { path: "/partner/{partition}/_SUCCESS" },
    asset: ["partner/feed", "2025-02-26"],
    status: "canceled",
    attempts: 1,
  },
  {
    name: "api",
    kind: "httpOk",
    args: { url: "http://partner.example/ready", status: 200 },
    asset: ["partner/api", null],
    status: "waiting",
    attempts: 2,
    lastResult: { error: "connect ECONNREFUSED 10.0.0.1:80" },
    error: { code: "TRIGGER_CHECK_FAILED", message: "trigger httpOk failed: connect ECONNREFUSED 10.0.0.1:80", consecutiveFailures: 2 },
  },
];

/** A running run with two deferred steps and a resumed one, plus source observations; nothing of it is due for a check. */
export async function seedTriggers(db: Kysely<Database>): Promise<SeededTriggers> {
  const { rows: runs } = await sql<{ id: string }>`
    insert into runs (status, origin, snapshot_version, plan, steps_total, steps_done, started_at)
    values ('running', 'manual', 1, '{}'::jsonb, 3, 1, ${CHECKED_AT}) returning id`.execute(db);
  const runId = runs[0]!.id;
  const { rows: stepRows } = await sql<{ id: string; partition_key: string; asset_key: string }>`
    insert into steps (run_id, asset_key, partition_key, state, try_number) values
      (${runId}::uuid, 'feed/clean', '2025-03-01', 'deferred', 1),
      (${runId}::uuid, 'feed/clean', '2025-03-02', 'deferred', 1),
      (${runId}::uuid, 'feed/report', '', 'success', 1)
    returning id, asset_key, partition_key`.execute(db);
  const stepId = (asset: string, partition: string) =>
    Number(stepRows.find((r) => r.asset_key === asset && r.partition_key === partition)!.id);
  const steps = {
    first: stepId("feed/clean", "2025-03-01"),
    second: stepId("feed/clean", "2025-03-02"),
    report: stepId("feed/report", ""),
  };
  const ids = {} as Record<TriggerName, number>;
  for (const r of ROWS) {
    const ended = r.status === "waiting" ? null : CHECKED_AT;
    const { rows } = await sql<{ id: string }>`
      insert into triggers (kind, args, step_id, asset_key, partition_key, status, attempts, next_check_at, timeout_at,
                            last_checked_at, last_result, payload, error, partition_window, ended_at)
      values (${r.kind}, ${JSON.stringify(r.args)}::jsonb, ${r.step ? steps[r.step] : null}, ${r.asset?.[0] ?? null}, ${r.asset?.[1] ?? null},
              ${r.status}, ${r.attempts ?? 0}, ${r.name === "first" ? new Date(Date.now() + 3_600_000) : LATER}, ${LATER},
              ${r.attempts ? CHECKED_AT : null}, ${json(r.lastResult)}::jsonb, ${json(r.payload)}::jsonb, ${json(r.error)}::jsonb,
              ${json(r.window)}::jsonb, ${ended})
      returning id`.execute(db);
    ids[r.name] = Number(rows[0]!.id);
  }
  // A step points at its latest trigger.
  for (const [step, name] of [
    ["first", "first"],
    ["second", "second"],
    ["report", "report"],
  ] as const) {
    await sql`update steps set trigger_id = ${ids[name]} where id = ${steps[step]}`.execute(db);
  }
  return { runId, steps, ids };
}

function json(value: unknown): string | null {
  return value === undefined ? null : JSON.stringify(value);
}

export interface ApiServer {
  readonly port: number;
  readonly url: string;
  /** An empty definitions directory for the server and CLI commands. */
  readonly definitionsDir: string;
  stop(): Promise<void>;
}

/** The API on the given Postgres database in a child process (triggers-server.ts): real HTTP, errors with their codes. */
export async function startApiServer(databaseUrl: string): Promise<ApiServer> {
  const definitionsDir = await mkdtemp(path.join(tmpdir(), "tributary-triggers-defs-"));
  const port = freePort();
  const child = spawn(process.execPath, ["--import", "tsx", path.join(import.meta.dirname, "triggers-server.ts")], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), DEFINITIONS_DIR: definitionsDir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    await rm(definitionsDir, { recursive: true, force: true });
  };
  try {
    await eventually(
      async () => ((await graphqlAt(port, "{ triggerCounts { waiting } }")).data ? true : undefined),
      60_000,
      `the API to start\n${output}`,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { port, url: `http://127.0.0.1:${port}`, definitionsDir, stop };
}
