import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { launchRun } from "../../src/api/index.js";
import { GraphCache, PgDefinitionStore, PgRunStore } from "../../src/storage/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { eventually, startCli } from "./run-cli.js";
import { RUN_DECISIONS } from "../../src/planner/index.js";

// Two `tributary reconciler` processes on one Postgres, as in production;
// one is killed with SIGKILL in the middle of a burst.
const DEFS = `
import { asset, staticPartitions } from "tributary";
const keys = Array.from({ length: 300 }, (_, i) => "k" + String(i).padStart(3, "0"));
export const burst = asset(
  { key: "r/burst", partitions: staticPartitions(keys), retries: { max: 2, delay: 0 } },
  async () => { await new Promise((r) => setTimeout(r, 30)); return 1; },
);
`;

describePostgres("tributary reconciler (two processes, one database)", () => {
  const database = useTestDatabase();
  let defsDir: string;
  let dataDir: string;

  beforeAll(async () => {
    defsDir = await mkdtemp(path.join(tmpdir(), "tributary-rec-defs-"));
    dataDir = await mkdtemp(path.join(tmpdir(), "tributary-rec-data-"));
    await writeFile(path.join(defsDir, "burst.ts"), DEFS);
  });

  afterAll(async () => {
    await rm(defsDir, { recursive: true, force: true });
    await rm(dataDir, { recursive: true, force: true });
  });

  it("finishes every step when one reconciler is SIGKILLed mid-burst; no try runs twice unless it was lost", async () => {
    const args = [
      "reconciler",
      "--definitions",
      defsDir,
      "--data-dir",
      dataDir,
      "--processes",
      "1",
      "--concurrency-per-process",
      "8",
      "--zombie-after",
      "3s",
    ];
    const env = { DATABASE_URL: database.url };
    const a = startCli(args, { env });
    const b = startCli(args, { env });
    try {
      const db = database.db;
      // Launch only once both are up, so both take part in the burst.
      await eventually(
        async () => (a.output().includes("is running") && b.output().includes("is running") ? true : undefined),
        120_000,
        () => `both reconcilers to start\n${a.output()}\n${b.output()}`,
      );
      const definitions = new PgDefinitionStore(db);
      const runs = new PgRunStore(db, RUN_DECISIONS);
      const { runId } = await launchRun(
        { graphs: new GraphCache(definitions), runs, definitions },
        { assetKeys: ["r/burst"], allPartitions: true },
        new Date(),
      );

      // Both are working; then one dies without any chance to clean up.
      await eventually(
        async () => {
          const { rows } = await sql<{ n: number }>`
          select count(distinct worker_id)::int as n from step_tries where run_id = ${runId}::uuid and worker_id is not null`.execute(db);
          return (rows[0]?.n ?? 0) >= 2 ? true : undefined;
        },
        60_000,
        "both reconcilers to run steps",
      );
      a.kill("SIGKILL");

      const run = await eventually(
        async () => {
          const r = await runs.getRunSummary(runId);
          return r && ["success", "failed", "canceled"].includes(r.status) ? r : undefined;
        },
        120_000,
        () => `the run to end\n${b.output()}`,
      );
      expect(run.status).toBe("success");
      expect(run.stepsDone).toBe(300);

      const { rows: tries } = await sql<{ step_id: number; state: string; code: string | null }>`
        select step_id, state, error->>'code' as code from step_tries where run_id = ${runId}::uuid order by step_id, try_number`.execute(
        db,
      );
      const byStep = new Map<number, { state: string; code: string | null }[]>();
      for (const t of tries) byStep.set(t.step_id, [...(byStep.get(t.step_id) ?? []), t]);
      expect(byStep.size).toBe(300);
      for (const list of byStep.values()) {
        // Exactly one successful try per step; any earlier try was lost with the killed process: running (a zombie),
        // or claimed by it and not started (handed out again once it is seen gone, or at the queued timeout).
        expect(list.filter((t) => t.state === "success")).toHaveLength(1);
        for (const t of list.slice(0, -1)) expect(["STEP_ZOMBIE", "STEP_RECONCILER_LOST", "STEP_QUEUED_TIMEOUT"]).toContain(t.code);
      }
      const { rows: drift } = await sql<{ active: number; occupied: number }>`
        select (select steps_active from runs where id = ${runId}::uuid) as active,
               (select occupied_slots from pools where name = 'default_pool') as occupied`.execute(db);
      expect(drift[0]).toEqual({ active: 0, occupied: 0 });
    } finally {
      a.kill("SIGKILL");
      b.kill("SIGTERM");
      const code = await new Promise<number | null>((resolve) => (b.exitCode !== null ? resolve(b.exitCode) : b.once("exit", resolve)));
      expect(code, b.output()).toBe(0);
    }
  }, 240_000);
});
