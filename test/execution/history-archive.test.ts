import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { localGuard } from "../../src/access/index.js";
import { historyArchiveDays, restoreHistory, type HistoryServices } from "../../src/api/index.js";
import { resolveSettings } from "../../src/cli/settings.js";
import { HistoryArchiveTask } from "../../src/reconciler/index.js";
import {
  decodeArchive,
  deleteQueuedObjects,
  HISTORY_TABLES,
  PgHistoryArchiveStore,
  PgOutputDeletionStore,
  type OutputStore,
} from "../../src/storage/index.js";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";

// History archival on Postgres: runs past their retention go to the output store with their steps, tries, waits,
// events, lineage rows, check results and logs, as gzip JSON Lines by day, and are deleted; what a live answer needs
// stays (each partition's latest event of each kind, events still read by one that stays, a check's latest result,
// unfinished runs); a restore puts a day back exactly as it was.

const DEFS = `
import { asset, check, daily } from "tributary";
const days = daily({ start: "2025-03-01", end: "2025-03-08" });
export const raw = asset({ key: "hist/raw", partitions: days }, async (ctx) => ({ day: ctx.partition.key }));
export const clean = asset({ key: "hist/clean", partitions: days, deps: { raw } }, async (_ctx, { raw }) => raw.day);
export const cleanOk = check(clean, { name: "clean_ok" }, () => ({ passed: true }));
export const kept = asset({ key: "hist/kept", partitions: days, retention: { history: "3650d" } }, async () => 1);
`;

const DAY = 86_400_000;
const ARCHIVED_DAY = "2025-06-01";

describePostgres("history archival", () => {
  let h: Harness;
  let store: PgHistoryArchiveStore;
  let services: HistoryServices;

  const success = async (keys: string[], selection: { from: string; to: string } | { partition: string }) => {
    const run = await h.waitForRun(await h.launch(keys, selection), 60_000);
    expect(run.status, await h.describe([run.id])).toBe("success");
    return run.id;
  };
  /** Dates a run (and its events, tries and check results) on a day, `minute` minutes past 10:00 UTC. */
  const date = async (runId: string, day: string, minute: number) => {
    const at = new Date(`${day}T10:${String(minute).padStart(2, "0")}:00Z`);
    await sql`update runs set created_at = ${at}, started_at = ${at}, ended_at = ${at}::timestamptz + interval '1 minute' where id = ${runId}`.execute(
      h.db,
    );
    await sql`update events set created_at = ${at}::timestamptz + interval '30 seconds' where run_id = ${runId}`.execute(h.db);
    await sql`update check_results set created_at = ${at}::timestamptz + interval '40 seconds' where run_id = ${runId}`.execute(h.db);
    await sql`update step_tries set ended_at = ${at}::timestamptz + interval '50 seconds' where run_id = ${runId}`.execute(h.db);
  };
  /** A log file per try, where the local executor writes them. */
  const writeLogs = async (runId: string) => {
    const { rows } = await sql<{ step_id: string; try_number: number }>`
      select step_id::text, try_number from step_tries where run_id = ${runId}`.execute(h.db);
    for (const r of rows) {
      const file = path.join(h.logsDir, runId, `${r.step_id}-${r.try_number}.log`);
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, `log of step ${r.step_id} try ${r.try_number}\n`);
    }
    return rows.length;
  };
  /** Every row of the runs, and of their events, as the database holds them. */
  const snapshot = async (runIds: readonly string[]) => {
    const ids = sql`${[...runIds]}::uuid[]`;
    const of = async (query: ReturnType<typeof sql>) => (await sql<{ row: unknown }>`${query}`.execute(h.db)).rows.map((r) => r.row);
    return {
      runs: await of(sql`select to_jsonb(t) as row from runs t where id = any(${ids}) order by id`),
      steps: await of(sql`select to_jsonb(t) as row from steps t where run_id = any(${ids}) order by id`),
      step_deps: await of(
        sql`select to_jsonb(t) as row from step_deps t join steps s on s.id = t.step_id where s.run_id = any(${ids}) order by t.step_id, t.upstream_step_id`,
      ),
      step_tries: await of(sql`select to_jsonb(t) as row from step_tries t where run_id = any(${ids}) order by id`),
      events: await of(sql`select to_jsonb(t) as row from events t where run_id = any(${ids}) order by id`),
      event_inputs: await of(
        sql`select to_jsonb(t) as row from event_inputs t join events e on e.id = t.event_id where e.run_id = any(${ids})
            order by t.event_id, t.upstream_asset_key, t.upstream_partition_key`,
      ),
      check_results: await of(sql`select to_jsonb(t) as row from check_results t where run_id = any(${ids}) order by id`),
    };
  };
  const count = async (query: ReturnType<typeof sql>) => (await sql<{ n: number }>`${query}`.execute(h.db)).rows[0]!.n;
  const task = (retentionMs: number | undefined, extra: { batch?: number; outputStore?: OutputStore } = {}) =>
    new HistoryArchiveTask({
      store: new PgHistoryArchiveStore(h.db),
      outputStore: extra.outputStore ?? h.outputStore,
      logsDir: h.logsDir,
      retentionMs,
      graphs: h.graphs,
      ...(extra.batch !== undefined ? { batch: extra.batch } : {}),
    });

  beforeAll(async () => {
    h = await Harness.create({ files: { "hist.ts": DEFS } });
    store = new PgHistoryArchiveStore(h.db);
    services = { archives: store, outputStore: h.outputStore, logsDir: h.logsDir };
  }, 180_000);

  afterAll(() => h?.stop());

  it("archives runs past the retention with their rows and logs, keeps what answers need, and restores a day as it was", async () => {
    const first = await success(["hist/raw", "hist/clean"], { from: "2025-03-01", to: "2025-03-02" });
    const second = await success(["hist/raw", "hist/clean"], { from: "2025-03-01", to: "2025-03-02" });
    const recent = await success(["hist/raw", "hist/clean"], { partition: "2025-03-03" });
    const ownRetention = await success(["hist/kept"], { partition: "2025-03-01" });
    await date(first, ARCHIVED_DAY, 0);
    await date(second, ARCHIVED_DAY, 5);
    await date(ownRetention, ARCHIVED_DAY, 10);
    const logs = (await writeLogs(first)) + (await writeLogs(second));
    const before = await snapshot([first, second]);
    // The second run wrote each partition's latest events: they stay, and so do the check results it recorded.
    const latest = await count(sql`select count(*)::int as n from events where run_id = ${second}`);
    const latestChecks = await count(sql`select count(*)::int as n from check_results where run_id = ${second}`);
    expect(latestChecks).toBe(2);

    // Within the retention: nothing goes; nor without a default, where only hist/kept has a retention (not reached).
    expect((await task(3650 * DAY).archive()).archives).toBe(0);
    expect((await task(undefined).archive()).archives).toBe(0);

    const pass = await task(30 * DAY).archive();
    expect(pass).toMatchObject({ archives: 1, runs: 2, logs });
    // Past it: both runs with every row of theirs, except the second run's events and checks, which are the latest.
    for (const id of [first, second]) {
      expect(await count(sql`select count(*)::int as n from runs where id = ${id}`)).toBe(0);
      expect(await count(sql`select count(*)::int as n from steps where run_id = ${id}`)).toBe(0);
      expect(await count(sql`select count(*)::int as n from step_tries where run_id = ${id}`)).toBe(0);
      expect(existsSync(path.join(h.logsDir, id))).toBe(false);
    }
    expect(await count(sql`select count(*)::int as n from events where run_id = ${first}`)).toBe(0);
    expect(await count(sql`select count(*)::int as n from events where run_id = ${second}`)).toBe(latest);
    expect(await count(sql`select count(*)::int as n from check_results where run_id = ${second}`)).toBe(latestChecks);
    expect(await count(sql`select count(*)::int as n from check_results where run_id = ${first}`)).toBe(0);
    // The recent run, and the run of an asset whose own retention is longer, stay whole.
    expect(await count(sql`select count(*)::int as n from runs where id in (${recent}, ${ownRetention})`)).toBe(2);
    // The partitions' status and their lineage still answer: clean's latest read raw's latest.
    const status = await sql<{
      status: string;
    }>`select status from partition_status where asset_key = 'hist/clean' order by partition_key`.execute(h.db);
    expect(status.rows.map((r) => r.status)).toEqual(["materialized", "materialized", "materialized"]);
    expect(
      await count(sql`select count(*)::int as n from event_inputs ei join events e on e.id = ei.event_id
                      join events u on u.id = ei.upstream_event_id where e.run_id = ${second}`),
    ).toBe(2);

    // The object: gzip JSON Lines of the day, with the rows that went and the logs.
    const days = await historyArchiveDays(services);
    expect(days).toHaveLength(1);
    expect(days[0]).toMatchObject({ day: ARCHIVED_DAY, archives: 1, runs: 2, logs, restoredArchives: 0, heldUntil: null });
    const [object] = await store.archivesOf(ARCHIVED_DAY);
    expect(object!.storageRef).toMatch(new RegExp(`history/${ARCHIVED_DAY}/[0-9a-f-]+\\.jsonl\\.gz$`));
    const content = await decodeArchive(await h.outputStore!.getBytes(object!.storageRef), object!.storageRef);
    expect(content.rows.runs).toHaveLength(2);
    expect(content.rows.events.length).toBe(before.events.length - latest);
    expect(content.logs).toHaveLength(logs);
    expect(days[0]!.rows).toBe(HISTORY_TABLES.reduce((n, t) => n + content.rows[t].length, 0));

    // Restored: every row exactly as it was, the logs back, the object deleted, the day held.
    const restored = await restoreHistory(services, { day: ARCHIVED_DAY }, new Date(), localGuard());
    expect(restored.rows.runs).toBe(2);
    expect(await snapshot([first, second])).toEqual(before);
    expect(
      await readFile(path.join(h.logsDir, first, (await import("node:fs")).readdirSync(path.join(h.logsDir, first))[0]!), "utf8"),
    ).toMatch(/^log of step/);
    expect(await deleteQueuedObjects(new PgOutputDeletionStore(h.db), h.outputStore, new Date())).toEqual({ deleted: 1, failed: [] });
    expect(existsSync(object!.storageRef.slice("file://".length))).toBe(false);
    const afterRestore = (await historyArchiveDays(services))[0]!;
    expect(afterRestore).toMatchObject({ day: ARCHIVED_DAY, archives: 0, restoredArchives: 1 });
    expect(afterRestore.heldUntil!.getTime()).toBeGreaterThan(Date.now() + 6 * DAY);
    // Held: not archived again until the hold ends.
    expect((await task(30 * DAY).archive()).archives).toBe(0);
    await sql`update history_holds set held_until = now() - interval '1 second'`.execute(h.db);
    expect(await task(30 * DAY).archive()).toMatchObject({ archives: 1, runs: 2 });
  }, 180_000);

  it("refuses a restore of a day never archived, or not a day, or with a bad hold, and restores nothing", async () => {
    await expect(restoreHistory(services, { day: "2024-01-01" }, new Date())).rejects.toMatchObject({
      code: "HISTORY_DAY_NOT_ARCHIVED",
      message: "no history of 2024-01-01 is archived; `tributary archive list` shows the days that are",
    });
    await expect(restoreHistory(services, { day: "2025-02-30" }, new Date())).rejects.toMatchObject({
      code: "HISTORY_DAY_INVALID",
      location: { field: "day" },
    });
    await expect(restoreHistory(services, { day: "yesterday" }, new Date())).rejects.toMatchObject({ code: "HISTORY_DAY_INVALID" });
    await expect(restoreHistory(services, { day: ARCHIVED_DAY, hold: "10m" }, new Date())).rejects.toMatchObject({
      code: "HISTORY_HOLD_INVALID",
      message: 'hold "10m" must be a duration between 1h and 3650d, e.g. 7d',
    });
    // The day archived by the test before is still archived.
    expect((await historyArchiveDays(services)).find((d) => d.day === ARCHIVED_DAY)).toMatchObject({ archives: 1 });
  });

  it("writes nothing and deletes nothing when the output store refuses, and archives at the next pass", async () => {
    const run = await success(["hist/raw"], { partition: "2025-03-04" });
    await success(["hist/raw"], { partition: "2025-03-04" });
    await date(run, "2025-06-02", 0);
    const broken: OutputStore = {
      ...h.outputStore!,
      description: "a store that is down",
      put: () => Promise.reject(new Error("connect ECONNREFUSED")),
      putBytes: () => Promise.reject(new Error("connect ECONNREFUSED")),
      get: (ref) => h.outputStore!.get(ref),
      getBytes: (ref) => h.outputStore!.getBytes(ref),
      delete: (ref) => h.outputStore!.delete(ref),
    };
    await expect(task(30 * DAY, { outputStore: broken }).archive()).rejects.toThrow("ECONNREFUSED");
    expect(await count(sql`select count(*)::int as n from runs where id = ${run}`)).toBe(1);
    expect(await count(sql`select count(*)::int as n from history_archives where state = 'writing'`)).toBe(0);
    expect(await count(sql`select count(*)::int as n from history_archive_claims`)).toBe(0);
    expect(await task(30 * DAY).archive()).toMatchObject({ archives: 1, runs: 1 });
    expect(await count(sql`select count(*)::int as n from runs where id = ${run}`)).toBe(0);
  }, 120_000);

  it("deletes nothing of a run that changed after it was claimed, and drops that archive", async () => {
    const run = await success(["hist/raw"], { partition: "2025-03-05" });
    await success(["hist/raw"], { partition: "2025-03-05" });
    await date(run, "2025-06-03", 0);
    // What the task asks: 30 days, and hist/kept's own 3650.
    const policy = {
      before: new Date(Date.now() - 30 * DAY),
      assets: [{ assetKey: "hist/kept", before: new Date(Date.now() - 3650 * DAY) }],
    };
    const batch = await store.claim(policy, { limit: 10, owner: "test" }, new Date());
    expect(batch).toMatchObject({ day: "2025-06-03", runIds: [run] });
    await store.written(batch!.archiveId, {
      storageRef: await h.outputStore!.putBytes("history/x/changed.jsonl.gz", new Uint8Array([1]), "application/gzip"),
      sizeBytes: 1,
      logCount: 0,
      logPartitions: [],
    });
    // Cleared meanwhile (its row moves on).
    await sql`update runs set updated_at = now() where id = ${run}`.execute(h.db);
    expect(await store.complete(batch!, new Date())).toEqual({ archived: false, rows: 0 });
    expect(await count(sql`select count(*)::int as n from runs where id = ${run}`)).toBe(1);
    expect(await count(sql`select count(*)::int as n from history_archives where id = ${batch!.archiveId}`)).toBe(0);
    expect(await count(sql`select count(*)::int as n from output_object_deletions where reason = 'archive abandoned'`)).toBe(1);
    // An archiver that died while writing: its claim is released after a while, and the run archived again.
    const abandoned = await store.claim(policy, { limit: 10, owner: "died" }, new Date());
    expect(abandoned).toMatchObject({ runIds: [run] });
    expect(await store.claim(policy, { limit: 10, owner: "other" }, new Date())).toBeNull();
    expect(await store.releaseAbandoned(new Date(Date.now() + 1_000), new Date())).toBe(1);
    expect(await task(30 * DAY).archive()).toMatchObject({ archives: 1, runs: 1 });
  }, 120_000);

  it("keeps a run that has not ended, and the runs of a backfill still going, however old", async () => {
    await success(["hist/raw"], { partition: "2025-03-06" });
    const run = await success(["hist/raw"], { partition: "2025-03-06" });
    await date(run, "2025-06-05", 0);
    await sql`update runs set status = 'running' where id = ${run}`.execute(h.db);
    expect((await task(30 * DAY).archive()).runs).toBe(0);
    const { id: backfill } = (
      await sql<{ id: string }>`
        insert into backfills (status, selection, partitions) values ('running', '{}'::jsonb, '[]'::jsonb) returning id`.execute(h.db)
    ).rows[0]!;
    await sql`update runs set status = 'success', backfill_id = ${backfill} where id = ${run}`.execute(h.db);
    expect((await task(30 * DAY).archive()).runs).toBe(0);
    await sql`update backfills set status = 'completed' where id = ${backfill}`.execute(h.db);
    expect(await task(30 * DAY).archive()).toMatchObject({ archives: 1, runs: 1 });
    expect(await count(sql`select count(*)::int as n from runs where id = ${run}`)).toBe(0);
  }, 120_000);

  it("archives the events an archived run left as a partition's latest once they are superseded", async () => {
    const run = await success(["hist/raw"], { partition: "2025-03-07" });
    await date(run, "2025-06-06", 0);
    expect(await task(30 * DAY).archive()).toMatchObject({ runs: 1 });
    const left = await count(sql`select count(*)::int as n from events where run_id = ${run}`);
    expect(left).toBeGreaterThan(0);
    // Still the partition's latest: a pass keeps them.
    expect((await task(30 * DAY).archive()).events).toBe(0);
    await success(["hist/raw"], { partition: "2025-03-07" });
    expect(await task(30 * DAY).archive()).toMatchObject({ archives: 1, runs: 0, events: left });
    expect(await count(sql`select count(*)::int as n from events where run_id = ${run}`)).toBe(0);
    const restored = await restoreHistory(services, { day: "2025-06-06" }, new Date());
    expect(restored.rows).toMatchObject({ runs: 1, events: left });
  }, 120_000);

  it("says once, and archives nothing, when there is no output store to archive to", async () => {
    const said: string[] = [];
    const noStore = new HistoryArchiveTask({
      store: new PgHistoryArchiveStore(h.db),
      outputStore: null,
      logsDir: h.logsDir,
      retentionMs: 30 * DAY,
      log: (level, message) => said.push(`${level} ${message}`),
    });
    await noStore.run(new Date());
    await noStore.run(new Date(Date.now() + 120_000));
    await noStore.idle();
    expect(said).toEqual([
      expect.stringMatching(/^warn history archive: TRIBUTARY_HISTORY_RETENTION is set, but this process has no output store/),
    ]);
    expect(await noStore.archive()).toMatchObject({ archives: 0 });
  });

  it("two archivers at once archive each run once", async () => {
    const runs: string[] = [];
    for (let i = 0; i < 6; i++) runs.push(await success(["hist/raw"], { partition: "2025-03-01" }));
    for (const [i, id] of runs.entries()) await date(id, "2025-06-04", i);
    const before = await count(sql`select count(*)::int as n from history_archives where day = '2025-06-04'`);
    const passes = await Promise.all([task(30 * DAY, { batch: 1 }).archive(), task(30 * DAY, { batch: 1 }).archive()]);
    // The latest of the six wrote the partition's latest events; the run itself is past the retention all the same.
    expect(passes[0]!.runs + passes[1]!.runs).toBe(6);
    expect(await count(sql`select count(*)::int as n from runs where id = any(${runs}::uuid[])`)).toBe(0);
    expect(await count(sql`select count(*)::int as n from history_archives where day = '2025-06-04' and state = 'archived'`)).toBe(
      before + 6,
    );
    const objects = await store.archivesOf("2025-06-04");
    const archivedRuns: string[] = [];
    for (const o of objects) {
      const content = await decodeArchive(await h.outputStore!.getBytes(o.storageRef), o.storageRef);
      archivedRuns.push(...content.rows.runs.map((r) => (JSON.parse(r) as { id: string }).id));
    }
    expect(archivedRuns.sort()).toEqual([...runs].sort());
  }, 180_000);
});

describe("TRIBUTARY_HISTORY_RETENTION", () => {
  const retention = (value: string | undefined) => resolveSettings({}, { TRIBUTARY_HISTORY_RETENTION: value }).historyRetentionMs;

  it("is unset by default (history is kept), and reads durations as people write them", () => {
    expect(retention(undefined)).toBeUndefined();
    expect(retention("90d")).toBe(90 * DAY);
  });

  it("refuses a bad value, naming the variable", () => {
    expect(() => retention("a quarter")).toThrow(
      'environment variable TRIBUTARY_HISTORY_RETENTION: "a quarter" is not a duration; write e.g. 30d or 12h',
    );
    expect(() => retention("30m")).toThrow('environment variable TRIBUTARY_HISTORY_RETENTION: "30m" must be between 1h and 3650d');
  });
});
