import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";

const DEFS = `
import { existsSync, writeFileSync } from "node:fs";
import { asset } from "tributary";

export const throws = asset({ key: "f/throws" }, async () => {
  throw new Error("kaboom from user code");
});

export const notJson = asset({ key: "f/not_json" }, async () => ({ count: 10n }));

export const big = asset({ key: "f/big" }, async () => ({ blob: "x".repeat(60 * 1024) }));
export const bigDown = asset({ key: "f/big_down", deps: { big } }, async (_ctx, { big }) => ({ length: big.blob.length }));

export const hangs = asset({ key: "f/hangs", timeout: "1s" }, async () => {
  await new Promise(() => {});
});

export const hog = asset({ key: "f/hog" }, async () => {
  const kept = [];
  for (;;) kept.push(new Array(100_000).fill({ x: Math.random() }));
});

export const exits = asset({ key: "f/exits" }, async () => {
  process.exit(2);
});

// First try: announce and wait to be killed; later tries succeed. No retries: being killed is not its failure.
export const victim = asset({ key: "f/victim" }, async (ctx) => {
  const marker = new URL("./victim.started", import.meta.url);
  if (!existsSync(marker)) {
    writeFileSync(marker, String(process.pid));
    await new Promise((resolve) => setTimeout(resolve, 60_000));
  }
  return { tryNumber: ctx.tryNumber, pid: process.pid };
});
`;

interface TryRow {
  state: string;
  failure_class: string | null;
  error: { code?: string; message?: string; cause?: { message?: string; stack?: string }; stack?: string } | null;
  pid: number | null;
  worker_id: string | null;
}

describePostgres("execution: faults in user code on the local executor", () => {
  describe("without a large-output store", () => {
    let h: Harness;
    beforeAll(async () => {
      h = await Harness.create({
        files: { "faults.ts": DEFS },
        executor: "local",
        outputStore: false,
        node: { processes: 2, capacity: 1, memoryMb: 128, killGraceMs: 500 },
      });
    });
    afterAll(async () => {
      await h?.stop();
    });

    async function runOne(key: string): Promise<{ status: string; tries: TryRow[] }> {
      const run = await h.waitForRun(await h.launch([key]), 45_000);
      const { rows } = await sql<TryRow>`
        select state, error, failure_class, pid, worker_id from step_tries where run_id = ${run.id} order by try_number`.execute(h.db);
      return { status: run.status, tries: rows };
    }

    it("keeps the original message and stack of a thrown error on the try", async () => {
      const { status, tries } = await runOne("f/throws");
      expect(status).toBe("failed");
      expect(tries).toHaveLength(1);
      const e = tries[0]!.error!;
      expect(e.code).toBe("USER_CODE_ERROR");
      expect(tries[0]!.failure_class).toBe("user");
      expect(e.message).toContain("kaboom from user code");
      expect(e.cause?.message).toBe("kaboom from user code");
      expect(e.cause?.stack).toMatch(/faults\.ts:\d+/);
      expect(tries[0]!.pid).not.toBe(process.pid);
    });

    it("fails a non-serialisable return value", async () => {
      const { status, tries } = await runOne("f/not_json");
      expect(status).toBe("failed");
      expect(tries[0]!.error).toMatchObject({ code: "OUTPUT_NOT_SERIALIZABLE", message: expect.stringContaining("count") });
    });

    it("fails an output over 48 KB with no large-output store, naming the setting", async () => {
      const { status, tries } = await runOne("f/big");
      expect(status).toBe("failed");
      expect(tries[0]!.error).toMatchObject({ code: "OUTPUT_TOO_LARGE", message: expect.stringContaining("TRIBUTARY_OUTPUT_DIR") });
      const out = await sql<{ n: number }>`select count(*)::int as n from outputs where asset_key = 'f/big'`.execute(h.db);
      expect(out.rows[0]!.n).toBe(0);
    });

    it("times out a function that never returns", async () => {
      const { status, tries } = await runOne("f/hangs");
      expect(status).toBe("failed");
      expect(tries[0]!.error).toMatchObject({ code: "STEP_TIMEOUT", message: expect.stringContaining("timeout of 1 s") });
      expect(tries[0]!.failure_class).toBe("user");
    });

    it("fails a function that exhausts its process's memory", async () => {
      const { status, tries } = await runOne("f/hog");
      expect(status).toBe("failed");
      expect(tries[0]!.error).toMatchObject({ code: "WORKER_OUT_OF_MEMORY" });
      // Its process's own heap limit: the step's code used too much memory, so it is not run again.
      expect(tries).toHaveLength(1);
      expect(tries[0]!.failure_class).toBe("user");
    });

    it("fails a function that calls process.exit, and the worker lives on", async () => {
      const { status, tries } = await runOne("f/exits");
      expect(status).toBe("failed");
      expect(tries[0]!.error).toMatchObject({ code: "STEP_PROCESS_EXIT", message: expect.stringContaining("process.exit(2)") });
      // The guard failed the step instead of ending the process, which runs other steps.
      expect(() => process.kill(tries[0]!.pid!, 0)).not.toThrow();
    });

    it("runs a step whose worker process was SIGKILLed mid-step again, though it has no retries, and it succeeds", async () => {
      const runId = await h.launch(["f/victim"]);
      const running = await h.until(
        async () => {
          const { rows } = await sql<{ pid: number | null; state: string }>`
          select t.pid, t.state from step_tries t where t.run_id = ${runId} and t.try_number = 1`.execute(h.db);
          return rows[0]?.state === "running" && rows[0].pid ? rows[0].pid : undefined;
        },
        20_000,
        "the victim step to run",
      );
      process.kill(running, "SIGKILL");
      const run = await h.waitForRun(runId, 30_000);
      expect(run.status).toBe("success");
      const { rows } = await sql<TryRow & { try_number: number }>`
        select try_number, state, error, failure_class, pid, worker_id from step_tries where run_id = ${runId} order by try_number`.execute(
        h.db,
      );
      expect(rows.map((r) => [r.state, r.failure_class])).toEqual([
        ["failed", "infrastructure"],
        ["success", null],
      ]);
      expect(rows[0]!.error).toMatchObject({ code: "WORKER_EXITED", message: expect.stringContaining("SIGKILL") });
      expect(rows[1]!.pid).not.toBe(running);
      const out = await sql<{ inline_value: { tryNumber: number } }>`select inline_value from outputs where run_id = ${runId}`.execute(
        h.db,
      );
      expect(out.rows[0]!.inline_value.tryNumber).toBe(2);
    });
  });

  describe("with a local-directory output store", () => {
    let h: Harness;
    beforeAll(async () => {
      h = await Harness.create({ files: { "faults.ts": DEFS }, executor: "local", outputStore: true, node: { processes: 1, capacity: 2 } });
    });
    afterAll(async () => {
      await h?.stop();
    });

    it("stores an output over 48 KB by reference and hands it downstream", async () => {
      const run = await h.waitForRun(await h.launch(["f/big", "f/big_down"]), 45_000);
      expect(run.status).toBe("success");
      const { rows } = await sql<{ asset_key: string; inline_value: unknown; storage_ref: string | null; size_bytes: string }>`
        select asset_key, inline_value, storage_ref, size_bytes from outputs where run_id = ${run.id} order by asset_key`.execute(h.db);
      expect(rows[0]).toMatchObject({ asset_key: "f/big", inline_value: null, storage_ref: expect.stringMatching(/^file:\/\//) });
      expect(Number(rows[0]!.size_bytes)).toBeGreaterThan(48 * 1024);
      expect(rows[1]).toMatchObject({ asset_key: "f/big_down", inline_value: { length: 60 * 1024 }, storage_ref: null });
    });
  });
});
