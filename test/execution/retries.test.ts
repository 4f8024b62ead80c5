import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";

const DEFS = `
import { readFileSync, writeFileSync } from "node:fs";
import { asset, daily } from "tributary";

/** Counts calls in a file next to this module (per asset), surviving module reloads. */
function bump(name) {
  const file = new URL("./" + name + ".count", import.meta.url);
  let n = 0;
  try { n = Number(readFileSync(file, "utf8")); } catch {}
  writeFileSync(file, String(n + 1));
  return n + 1;
}

export const flaky = asset({ key: "r/flaky", retries: { max: 2, delay: 200 } }, async (ctx) => {
  const n = bump("flaky");
  if (n <= 2) throw new Error("flaky failure number " + n);
  return { n, tryNumber: ctx.tryNumber };
});

export const hopeless = asset({ key: "r/hopeless", partitions: daily({ start: "2025-01-01" }), retries: 1 }, async () => {
  throw new Error("never works");
});

export const expo = asset({ key: "r/expo", retries: { max: 3, delay: 200, backoff: "exponential" } }, async () => {
  throw new Error("always fails");
});
`;

describePostgres("execution: retries", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.create({ files: { "retries.ts": DEFS } });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it("retries a function that fails twice, then succeeds on the third try", async () => {
    const run = await h.waitForRun(await h.launch(["r/flaky"]));
    expect(run.status).toBe("success");
    const [step] = run.steps;
    expect(step!.state).toBe("success");
    expect(step!.tryNumber).toBe(3);
    expect(step!.tries.map((t) => t.state)).toEqual(["failed", "failed", "success"]);
    expect(step!.tries.map((t) => (t.error as { message?: string } | null)?.message ?? null)).toEqual([
      expect.stringContaining("flaky failure number 1"),
      expect.stringContaining("flaky failure number 2"),
      null,
    ]);
    // The retry delay (200 ms) passed between tries.
    for (let i = 1; i < 3; i++) {
      expect(step!.tries[i]!.startedAt!.getTime() - step!.tries[i - 1]!.endedAt!.getTime()).toBeGreaterThanOrEqual(190);
    }
    const out = await sql<{
      inline_value: unknown;
      try_number: number;
    }>`select inline_value, try_number from outputs where step_id = ${step!.id}`.execute(h.db);
    expect(out.rows).toEqual([{ inline_value: { n: 3, tryNumber: 3 }, try_number: 3 }]);
    // Only the final outcome is an event: intermediate failures are tries, not failures of the partition.
    const events = await sql<{ kind: string }>`select kind from events where step_id = ${step!.id}`.execute(h.db);
    expect(events.rows).toEqual([{ kind: "materialization" }]);
  });

  it("fails the step once retries are exhausted, and marks the partition failed", async () => {
    const runId = await h.launch(["r/hopeless"], { partition: "2025-01-02" });
    // retries: 1 waits the default 30 s: move the reconciler's clock past it.
    const retryAt = await h.until(
      async () => {
        const { rows } = await sql<{
          next_retry_at: Date | null;
        }>`select next_retry_at from steps where run_id = ${runId} and state = 'up_for_retry'`.execute(h.db);
        return rows[0]?.next_retry_at ?? undefined;
      },
      10_000,
      "the first try to fail",
    );
    expect(retryAt.getTime() - Date.now()).toBeGreaterThan(25_000);
    h.clockShiftMs = 31_000;
    const run = await h.waitForRun(runId);
    h.clockShiftMs = 0;
    expect(run.status).toBe("failed");
    const [step] = run.steps;
    expect(step!.state).toBe("failed");
    expect(step!.tries.map((t) => t.state)).toEqual(["failed", "failed"]);
    expect(step!.error).toMatchObject({ code: "USER_CODE_ERROR", message: expect.stringContaining("never works") });
    const ps = await sql<{ status: string; last_run_id: string }>`
      select status, last_run_id from partition_status where asset_key = 'r/hopeless' and partition_key = '2025-01-02'`.execute(h.db);
    expect(ps.rows).toEqual([{ status: "failed", last_run_id: run.id }]);
  });

  it("waits (2^n − 1) × delay before try n+1 with exponential backoff, and records it in next_retry_at", async () => {
    const runId = await h.launch(["r/expo"]);
    const seen = new Map<number, number>();
    // next_retry_at is set in the same transaction (same clock reading) as updated_at.
    const poll = async (): Promise<boolean> => {
      const { rows } = await sql<{ state: string; try_number: number; delay: number | null }>`
        select state, try_number,
               (extract(epoch from (next_retry_at - updated_at)) * 1000)::int as delay
        from steps where run_id = ${runId}`.execute(h.db);
      const s = rows[0]!;
      if (s.state === "up_for_retry" && s.delay !== null) seen.set(s.try_number, s.delay);
      return s.state === "failed";
    };
    await h.until(poll, 20_000, "r/expo to fail for good");
    expect(Object.fromEntries(seen)).toEqual({ 1: 200, 2: 600, 3: 1400 });
    const run = await h.waitForRun(runId);
    expect(run.status).toBe("failed");
    const tries = run.steps[0]!.tries;
    expect(tries).toHaveLength(4);
    for (const [i, factor] of [
      [1, 1],
      [2, 3],
      [3, 7],
    ] as const) {
      expect(tries[i]!.startedAt!.getTime() - tries[i - 1]!.endedAt!.getTime()).toBeGreaterThanOrEqual(200 * factor - 20);
    }
  });
});
