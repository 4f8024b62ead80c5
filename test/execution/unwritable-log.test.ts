import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
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

const run = promisify(execFile);

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

  // A real full file system: a small tmpfs mounted on the logs directory and filled up (mounting needs root, as CI
  // runs; elsewhere the directory stand-in above covers the same path).
  it.runIf(process.getuid?.() === 0)(
    "on a full file system (ENOSPC): fails the try as an infrastructure failure; once there is room, it succeeds",
    async () => {
      h = await Harness.create({ files: { "chatty.ts": DEFS }, start: false });
      // Mounted outside the harness's directories (which it removes at the end) and linked in as its logs directory.
      const mounted = await mkdtemp(path.join(tmpdir(), "tributary-full-logs-"));
      await run("mount", ["-t", "tmpfs", "-o", "size=16k", "tributary-full-logs", mounted]);
      await rm(h.logsDir, { recursive: true, force: true });
      await symlink(mounted, h.logsDir);
      try {
        const filler = path.join(h.logsDir, "filler");
        await writeFile(filler, Buffer.alloc(16 * 1024)).catch(() => undefined);
        const runId = await h.launch(["l/chatty"]);
        await h.startNodes();
        const failed = await h.until(
          async () => {
            const { rows } = await sql<{ code: string | null; failure_class: string | null; message: string | null }>`
            select error->>'code' as code, failure_class, error->>'message' as message from step_tries
            where run_id = ${runId} and state = 'failed'`.execute(h!.db);
            return rows[0];
          },
          60_000,
          "a try to fail for want of room",
        );
        expect(failed).toMatchObject({ code: "STEP_LOG_UNWRITABLE", failure_class: "infrastructure" });
        expect(failed.message).toMatch(/ENOSPC/);
        await rm(filler);
        const done = await h.waitForRun(runId, 120_000);
        expect(done.status, await h.describe([runId])).toBe("success");
        // Nothing the successful try logged is lost.
        const last = done.steps[0]!.tries.at(-1)!;
        const { rows } = await sql<{ id: string }>`select id from steps where run_id = ${runId}`.execute(h.db);
        expect(await readFile(path.join(h.logsDir, runId, `${rows[0]!.id}-${last.tryNumber}.log`), "utf8")).toContain("counting rows");
      } finally {
        await h.stop();
        h = undefined;
        await run("umount", [mounted]);
        await rm(mounted, { recursive: true, force: true });
      }
    },
  );
});
