import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openRuntime } from "../../src/cli/runtime.js";
import { resolveSettings } from "../../src/cli/settings.js";
import { HistoryArchiveTask } from "../../src/reconciler/index.js";
import { PgHistoryArchiveStore } from "../../src/storage/index.js";
import { commandStore, describePostgres, type CommandStore } from "../support/pg.js";
import { cliBudget, runCli } from "./run-cli.js";

// `tributary archive list|restore` in their own processes on a database of their own (Postgres; what they do is the
// same on the embedded one): the history a reconciler archived, listed by day and brought back; bad input exits 1
// naming it.
let store: CommandStore;
let defsDir: string;
const globals = () => ["--data-dir", store.dataDir, "--definitions", defsDir, "--url", "http://127.0.0.1:9"];
const DAY = 86_400_000;

beforeAll(async () => {
  defsDir = await mkdtemp(path.join(tmpdir(), "tributary-cli-archive-defs-"));
  await writeFile(
    path.join(defsDir, "archive.ts"),
    `import { asset, daily } from "tributary";
const days = daily({ start: "2025-01-06", end: "2025-01-12" });
export const day = asset({ key: "ca/day", partitions: days }, async (ctx) => ({ day: ctx.partition.key }));
`,
  );
});

afterAll(async () => {
  await rm(defsDir, { recursive: true, force: true });
});

/** What a reconciler with TRIBUTARY_HISTORY_RETENTION=30d does, once, after the runs are dated back to a day. */
async function archiveAsReconciler(day: string): Promise<{ runs: number; ids: string[] }> {
  const runtime = await openRuntime(resolveSettings({ dataDir: store.dataDir, definitions: defsDir }, store.env));
  try {
    const db = runtime.database.db;
    const at = new Date(`${day}T08:00:00Z`);
    await sql`update runs set created_at = ${at}, started_at = ${at}, ended_at = ${at}`.execute(db);
    await sql`update events set created_at = ${at} where run_id is not null`.execute(db);
    const ids = (await sql<{ id: string }>`select id from runs order by id`.execute(db)).rows.map((r) => r.id);
    const pass = await new HistoryArchiveTask({
      store: new PgHistoryArchiveStore(db),
      outputStore: runtime.outputStore,
      logsDir: runtime.logsDir,
      retentionMs: 30 * DAY,
      graphs: runtime.graphs,
    }).archive();
    return { runs: pass.runs, ids };
  } finally {
    await runtime.close();
  }
}

describePostgres("tributary archive list / restore (in-process)", () => {
  beforeAll(async () => {
    store = await commandStore("tributary-cli-archive-");
  });
  afterAll(async () => {
    await store?.remove();
  });

  it(
    "lists the archived days and restores one; a day never archived, or not a day, exits 1 naming it",
    { timeout: cliBudget(6) },
    async () => {
      for (let i = 0; i < 2; i++) {
        const run = await runCli(
          ["materialize", "ca/day", "--from", "2025-01-06", "--to", "2025-01-07", "--wait", "--json", ...globals()],
          { env: store.env },
        );
        expect(run.code, run.stderr).toBe(0);
      }
      const empty = await runCli(["archive", "list", ...globals()], { env: store.env });
      expect(empty.code, empty.stderr).toBe(0);
      expect(empty.stdout).toContain("no history is archived");

      const archived = await archiveAsReconciler("2025-02-01");
      expect(archived.runs).toBe(2);

      const listed = await runCli(["archive", "list", "--json", ...globals()], { env: store.env });
      expect(listed.code, listed.stderr).toBe(0);
      const days = (JSON.parse(listed.stdout) as { days: { day: string; archives: number; runs: number; sizeBytes: number }[] }).days;
      expect(days).toEqual([expect.objectContaining({ day: "2025-02-01", archives: 1, runs: 2 })]);
      expect(days[0]!.sizeBytes).toBeGreaterThan(0);

      // The partitions still answer from their latest materialisation while their runs are archived.
      const partitions = await runCli(["partitions", "ca/day", "--json", ...globals()], { env: store.env });
      expect(partitions.code, partitions.stderr).toBe(0);
      const statuses = (JSON.parse(partitions.stdout) as { partitions: { key: string; status: string }[] }).partitions;
      expect(statuses.filter((p) => p.status === "materialized").map((p) => p.key)).toEqual(["2025-01-06", "2025-01-07"]);

      const restored = await runCli(["archive", "restore", "2025-02-01", "--hold", "2d", "--json", ...globals()], { env: store.env });
      expect(restored.code, restored.stderr).toBe(0);
      expect(JSON.parse(restored.stdout)).toMatchObject({ ok: true, day: "2025-02-01", archives: 1, rows: { runs: 2, steps: 4 } });
      const runs = await runCli(["runs", "--json", ...globals()], { env: store.env });
      expect(runs.code, runs.stderr).toBe(0);
      expect((JSON.parse(runs.stdout) as { runs: { id: string }[] }).runs.map((r) => r.id).sort()).toEqual(archived.ids);

      const again = await runCli(["archive", "restore", "2025-02-01", "--json", ...globals()], { env: store.env });
      expect(again.code).toBe(1);
      expect(JSON.parse(again.stdout)).toMatchObject({ ok: false, error: { code: "HISTORY_DAY_NOT_ARCHIVED" } });
      expect(again.stdout).toContain("it was restored on");
      const never = await runCli(["archive", "restore", "2024-12-31", ...globals()], { env: store.env });
      expect(never.code).toBe(1);
      expect(never.stderr).toContain("no history of 2024-12-31 is archived");
      const notADay = await runCli(["archive", "restore", "last tuesday", ...globals()], { env: store.env });
      expect(notADay.code).toBe(1);
      expect(notADay.stderr).toContain('"last tuesday" is not a day; write it as YYYY-MM-DD (UTC)');
    },
  );
});
