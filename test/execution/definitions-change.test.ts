import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";

const KEEP = `
import { asset } from "tributary";
export const keep = asset({ key: "d/keep", priority: 10 }, async () => {
  globalThis.__tributaryKeepEntered = true;
  // Runs until the test has stored the new definitions (the in-process executor shares the test's globals).
  while (!globalThis.__tributaryKeepRelease) await new Promise((resolve) => setTimeout(resolve, 20));
  return "kept";
});
`;

const GONE = `
import { asset } from "tributary";
import { keep } from "./keep.ts";
export const gone = asset({ key: "d/gone", deps: { keep } }, async () => "never");
export const afterGone = asset({ key: "d/after_gone", deps: { gone } }, async () => "never");
export const goneRoot = asset({ key: "d/gone_root" }, async () => "never");
`;

describePostgres("execution: definitions changing mid-run", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
    delete (globalThis as { __tributaryKeepRelease?: boolean }).__tributaryKeepRelease;
  });

  it("ends the steps of assets that left the definitions as removed, and the run still ends", async () => {
    h = await Harness.create({ files: { "keep.ts": KEEP, "gone.ts": GONE }, node: { capacity: 1 } });
    const before = await h.graphs.current({ fresh: true });
    const runId = await h.launch(["d/keep", "d/gone", "d/after_gone", "d/gone_root"]);
    // d/keep (higher priority) holds the only slot; d/gone_root waits scheduled, d/gone and d/after_gone pending.
    // Inside the function, not only "running": the file is imported after the try starts, and the directory is
    // about to be rewritten (an import racing that would fail the try, as it should).
    const entered = () => (globalThis as { __tributaryKeepEntered?: boolean }).__tributaryKeepEntered === true;
    await h.until(
      async () => entered() && (await h!.runs.getRun(runId))!.steps.find((s) => s.assetKey === "d/keep")!.state === "running",
      10_000,
      "d/keep to run",
    );
    const version = await h.redefine({ "keep.ts": KEEP });
    expect(version).toBeGreaterThan(before.version);
    // A node notices a new definitions version within its graph cache's age; the steps it dispatches after that
    // are judged by the new definitions.
    for (const node of h.nodes)
      await h.until(async () => (await node.graphs.current()).version === version, 10_000, `node ${node.index} to see version ${version}`);
    (globalThis as { __tributaryKeepRelease?: boolean }).__tributaryKeepRelease = true;

    const run = await h.waitForRun(runId, 20_000);
    const byKey = Object.fromEntries(run.steps.map((s) => [s.assetKey, s]));
    expect(byKey["d/keep"]!.state, JSON.stringify(byKey["d/keep"]!.error)).toBe("success");
    for (const k of ["d/gone", "d/after_gone", "d/gone_root"]) {
      expect(byKey[k]!.state, JSON.stringify(byKey[k])).toBe("removed");
      expect(byKey[k]!.skipReason).toContain(`asset "${k}" is no longer in the definitions`);
    }
    expect(run.status).toBe("success");
    expect(run).toMatchObject({ stepsDone: 4, stepsFailed: 0, stepsActive: 0 });
    // The run keeps the plan and the definitions version it was made from.
    expect(run.snapshotVersion).toBe(before.version);
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from outputs where run_id = ${runId}`.execute(h.db);
    expect(rows[0]!.n).toBe(1);
    const pool = await sql<{ occupied_slots: number }>`select occupied_slots from pools where name = 'default_pool'`.execute(h.db);
    expect(pool.rows[0]!.occupied_slots).toBe(0);
  });
});
