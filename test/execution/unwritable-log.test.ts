import { mkdir, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";

// A try whose log cannot be written (the logs directory full, or the file's place taken) is not kept as done: it
// fails as an infrastructure failure naming the file, runs again without using the asset's retries, and its lines
// reach the worker's standard error meanwhile.
const DEFS = `
import { asset } from "tributary";
export const chatty = asset({ key: "l/chatty" }, async (ctx) => {
  ctx.log.info("counting rows");
  return 42;
});
`;

describePostgres("execution: a step log that cannot be written", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it("fails the try as an infrastructure failure naming the file, and the next try succeeds", async () => {
    h = await Harness.create({ files: { "chatty.ts": DEFS }, start: false });
    const runId = await h.launch(["l/chatty"]);
    const { rows } = await sql<{ id: string }>`select id from steps where run_id = ${runId}`.execute(h.db);
    const blocked = path.join(h.logsDir, runId, `${rows[0]!.id}-1.log`);
    // A directory where the first try's log file goes: every write to it fails, as on a full disk.
    await mkdir(blocked, { recursive: true });
    await h.startNodes();
    const run = await h.waitForRun(runId, 60_000);
    expect(run.status, await h.describe([runId])).toBe("success");
    const tries = run.steps[0]!.tries;
    expect(tries.map((t) => [t.state, (t.error as { code?: string } | null)?.code ?? null])).toEqual([
      ["failed", "STEP_LOG_UNWRITABLE"],
      ["success", null],
    ]);
    expect((tries[0]!.error as { message: string }).message).toContain(blocked);
    const classes = await sql<{ failure_class: string | null }>`
      select failure_class from step_tries where run_id = ${runId} order by try_number`.execute(h.db);
    expect(classes.rows.map((r) => r.failure_class)).toEqual(["infrastructure", null]);
    // The asset has no retries of its own: its budget is untouched.
    expect(run.steps[0]!.maxTries).toBe(2);
    expect(await readFile(path.join(h.logsDir, runId, `${rows[0]!.id}-2.log`), "utf8")).toContain("counting rows");
    await rm(blocked, { recursive: true, force: true });
  });
});
