import { existsSync } from "node:fs";
import { mkdir, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveSettings } from "../../src/cli/settings.js";
import { LogRetentionTask } from "../../src/reconciler/index.js";
import { PgLogRetentionStore } from "../../src/storage/index.js";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";

// Log retention: the log files of tries that ended longer ago than their asset's retention (else the default) are
// deleted, with the run directories they leave empty; tries that have not ended keep theirs, however old; other
// files in the logs directory are never touched.

const DEFS = `
import { asset, staticPartitions } from "tributary";
const parts = staticPartitions(["a", "b"]);
export const chatty = asset({ key: "logs/chatty", partitions: parts, retention: { logs: "2d" } }, async () => 1);
export const plain = asset({ key: "logs/plain", partitions: parts }, async () => 2);
`;

const DAY = 86_400_000;

describePostgres("log retention", () => {
  let h: Harness;
  /** Writes each step's try log where local executors do, dated like the try's end. */
  const logsOf = async (runId: string) => {
    const { rows } = await sql<{ id: string; asset_key: string }>`select id, asset_key from steps where run_id = ${runId}`.execute(h.db);
    const files = new Map<string, string>();
    for (const r of rows) {
      const file = path.join(h.logsDir, runId, `${r.id}-1.log`);
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, `log of ${r.asset_key}\n`);
      files.set(`${r.asset_key} ${r.id}`, file);
    }
    return files;
  };
  const age = async (runId: string, days: number) => {
    await sql`update step_tries set ended_at = now() - make_interval(days => ${days}) where run_id = ${runId}`.execute(h.db);
    const when = new Date(Date.now() - days * DAY);
    const dir = path.join(h.logsDir, runId);
    const { readdir } = await import("node:fs/promises");
    for (const name of await readdir(dir)) await utimes(path.join(dir, name), when, when);
  };
  const task = (retentionMs: number | undefined, runsPerPass = 1_000) =>
    new LogRetentionTask({ store: new PgLogRetentionStore(h.db), logsDir: h.logsDir, retentionMs, graphs: h.graphs, runsPerPass });

  beforeAll(async () => {
    h = await Harness.create({ files: { "logs.ts": DEFS } });
  }, 180_000);

  afterAll(() => h?.stop());

  it("deletes the logs of tries past their asset's retention, or the default, and keeps the rest", async () => {
    const old = (await h.waitForRun(await h.launch(["logs/chatty", "logs/plain"], { from: "a", to: "b" }), 60_000)).id;
    const recent = (await h.waitForRun(await h.launch(["logs/chatty", "logs/plain"], { from: "a", to: "b" }), 60_000)).id;
    const oldFiles = await logsOf(old);
    const recentFiles = await logsOf(recent);
    expect(oldFiles.size).toBe(4);
    await age(old, 5);
    await age(recent, 1);
    const stray = path.join(h.logsDir, "notes.txt");
    await writeFile(stray, "not a log");

    // No default: only chatty's own 2 days apply — its old tries' logs go, plain's stay.
    const perAsset = task(undefined, 1);
    let total = 0;
    // One run directory per pass: two passes go through both.
    for (let i = 0; i < 2; i++) total += (await perAsset.sweep(new Date())).deleted;
    expect(total).toBe(2);
    for (const [key, file] of oldFiles) expect(existsSync(file), key).toBe(!key.startsWith("logs/chatty"));
    for (const file of recentFiles.values()) expect(existsSync(file)).toBe(true);

    // A default of 3 days: plain's old logs go too, and the old run's directory with them.
    const withDefault = task(3 * DAY, 1);
    for (let i = 0; i < 2; i++) await withDefault.sweep(new Date());
    for (const file of oldFiles.values()) expect(existsSync(file)).toBe(false);
    expect(existsSync(path.join(h.logsDir, old))).toBe(false);
    for (const file of recentFiles.values()) expect(existsSync(file)).toBe(true);
    expect(existsSync(stray)).toBe(true);
  }, 120_000);

  it("keeps the log of a try that has not ended, however old", async () => {
    const runId = (await h.waitForRun(await h.launch(["logs/plain"], { partition: "a" }), 60_000)).id;
    const files = await logsOf(runId);
    await age(runId, 30);
    await sql`update step_tries set state = 'running', ended_at = null where run_id = ${runId}`.execute(h.db);
    expect((await task(3 * DAY).sweep(new Date())).deleted).toBe(0);
    for (const file of files.values()) expect(existsSync(file)).toBe(true);
    await sql`update step_tries set state = 'success', ended_at = now() - interval '30 days' where run_id = ${runId}`.execute(h.db);
    expect((await task(3 * DAY).sweep(new Date())).deleted).toBe(1);
  }, 60_000);
});

describe("TRIBUTARY_LOG_RETENTION", () => {
  const retention = (value: string | undefined) => resolveSettings({}, { TRIBUTARY_LOG_RETENTION: value }).logRetentionMs;

  it("is unset by default, reads durations, and refuses a bad value naming the variable", () => {
    expect(retention(undefined)).toBeUndefined();
    expect(retention("14d")).toBe(14 * DAY);
    expect(() => retention("a fortnight")).toThrow('environment variable TRIBUTARY_LOG_RETENTION: "a fortnight" is not a duration');
    expect(() => retention("5m")).toThrow("must be between 1h and 3650d");
  });
});
