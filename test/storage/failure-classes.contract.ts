// The run store applying failure classes, on each database it runs on: infrastructure failures re-run on their own
// budget and never use up an asset's retries; user failures are governed by `retries` alone.
import { sql, type Kysely } from "kysely";
import { beforeEach, describe, expect, it } from "vitest";
import type { FailureClass, SerializedError } from "../../src/errors/index.js";
import type { InfrastructureRetryPolicy } from "../../src/planner/index.js";
import type { RetryPolicySpec } from "../../src/sdk/index.js";
import type { Database, PgRunStore, StepCompletion } from "../../src/storage/index.js";

export interface FailureClassParts {
  readonly runs: PgRunStore;
  readonly db: Kysely<Database>;
}

const T0 = new Date("2025-06-01T10:00:00Z");
const at = (s: number) => new Date(T0.getTime() + s * 1000);
/** Jitter keeps the whole delay: the delays below are exact. */
const top = () => 1;
const ZOMBIE_AFTER_MS = 60_000;
const QUEUED_TIMEOUT_MS = 300_000;

export const retries = (max: number, delayMs = 1_000): RetryPolicySpec => ({
  max,
  delayMs,
  backoff: "fixed",
  maxDelayMs: null,
  jitter: false,
});

/** A run of one unpartitioned step of asset `a/one` with these retries, as the run store creates it. */
export function oneStepRunInput(policy: RetryPolicySpec): Parameters<PgRunStore["createRun"]>[0] {
  return {
    steps: [{ assetKey: "a/one", partitionKey: "", upstream: [] }],
    plan: {},
    snapshotVersion: 1,
    origin: "manual",
    settings: () => ({
      triggerRule: "all_success",
      retries: policy,
      pool: null,
      poolSlots: 1,
      priority: 0,
      executor: "local",
      queue: null,
      timeoutMs: null,
      maxConcurrency: null,
    }),
  };
}

/**
 * `setup(infrastructure)`: an empty database and a run store applying the planner's decisions with that
 * infrastructure retry policy.
 */
export function failureClassContract(name: string, setup: (infrastructure: InfrastructureRetryPolicy) => Promise<FailureClassParts>): void {
  describe(`failure classes (${name})`, () => {
    let parts: FailureClassParts;
    const use = async (infrastructure: InfrastructureRetryPolicy = { max: 5, delayMs: 2_000, maxDelayMs: 60_000 }) => {
      parts = await setup(infrastructure);
    };
    beforeEach(async () => {
      await use();
    });

    /** A run of one unpartitioned step of asset `a/one` with these retries; its step id. */
    async function oneStepRun(policy: RetryPolicySpec): Promise<{ runId: string; stepId: number }> {
      const { runId } = await parts.runs.createRun(oneStepRunInput(policy), T0);
      const step = await parts.db.selectFrom("steps").select("id").where("run_id", "=", runId).executeTakeFirstOrThrow();
      return { runId, stepId: Number(step.id) };
    }

    /** Claims the step at `now` (it must be scheduled) and reports it started; its try number. */
    async function startTry(stepId: number, now: Date): Promise<number> {
      const claimed = await parts.runs.claimRunnable({ now, capacity: { local: 10 }, limit: 10 });
      const mine = claimed.find((c) => c.stepId === stepId);
      expect(mine, `step ${stepId} claimed at ${now.toISOString()}`).toBeDefined();
      await parts.runs.markStarted([{ stepId, tryNumber: mine!.tryNumber, workerId: "w-1", hostname: "h", pid: 42, startedAt: now }], now);
      return mine!.tryNumber;
    }

    const failure = (stepId: number, tryNumber: number, now: Date, failureClass: FailureClass, code: string): StepCompletion => ({
      stepId,
      tryNumber,
      startedAt: now,
      endedAt: now,
      workerId: "w-1",
      logRef: null,
      outcome: "failed",
      retryable: true,
      failureClass,
      error: { name: "TributaryError", code, message: `${code} in try ${tryNumber}` },
    });

    const success = (stepId: number, tryNumber: number, now: Date): StepCompletion => ({
      stepId,
      tryNumber,
      startedAt: now,
      endedAt: now,
      workerId: "w-1",
      logRef: null,
      outcome: "success",
      output: { inline: "1", sizeBytes: 1 },
      dataVersion: "v1",
      codeVersion: null,
      inputs: [],
    });

    const stepRow = (id: number) => parts.db.selectFrom("steps").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
    const errorIn = (row: { error: unknown }) => row.error as SerializedError;
    const tryClasses = async (stepId: number) =>
      (
        await parts.db
          .selectFrom("step_tries")
          .select(["try_number", "state", "failure_class"])
          .where("step_id", "=", stepId)
          .orderBy("try_number")
          .execute()
      ).map((t) => [t.try_number, t.state, t.failure_class]);
    const housekeeping = (now: Date) =>
      parts.runs.housekeeping({ now, zombieAfterMs: ZOMBIE_AFTER_MS, queuedTimeoutMs: QUEUED_TIMEOUT_MS, random: top });

    it("puts a zombie's step with no retries up for retry on the infrastructure budget, and the run succeeds", async () => {
      const { runId, stepId } = await oneStepRun(retries(0));
      await startTry(stepId, at(0));
      // No heartbeat for more than the zombie timeout: the worker is presumed dead.
      expect((await housekeeping(at(120))).zombies).toBe(1);
      const after = await stepRow(stepId);
      expect(after.state).toBe("up_for_retry");
      // 2 s after the failure: the first infrastructure re-run's delay.
      expect(after.next_retry_at?.getTime()).toBe(at(122).getTime());
      expect(after.infrastructure_failures).toBe(1);
      expect(after.tries_before).toBe(1); // the try does not count against retries: 0
      expect(await tryClasses(stepId)).toEqual([[1, "failed", "infrastructure"]]);

      expect((await housekeeping(at(123))).retriesDue).toBe(1);
      expect(await startTry(stepId, at(123))).toBe(2);
      await parts.runs.completeSteps([success(stepId, 2, at(124))], at(124));
      const run = await parts.runs.getRun(runId);
      expect(run?.status).toBe("success");
      const step = run!.steps[0]!;
      expect(step.maxTries).toBe(2); // one try of the user's, plus the re-run
      expect(step.tries.map((t) => [t.tryNumber, t.state, t.failureClass])).toEqual([
        [1, "failed", "infrastructure"],
        [2, "success", null],
      ]);
      expect((step.tries[0]!.error as SerializedError).code).toBe("STEP_ZOMBIE");
    });

    it("holds no silence against a worker that the database's own outage explains: a zombie only once the time has passed since it came back", async () => {
      const { stepId } = await oneStepRun(retries(0));
      await startTry(stepId, at(0));
      // The database was away from 10 s to 200 s: no heartbeat could be written; it answers again at 200 s.
      const back = { reachableSince: at(200) };
      const hk = (now: Date) =>
        parts.runs.housekeeping({ now, zombieAfterMs: ZOMBIE_AFTER_MS, queuedTimeoutMs: QUEUED_TIMEOUT_MS, random: top, ...back });
      expect((await hk(at(200))).zombies).toBe(0);
      expect((await hk(at(200 + ZOMBIE_AFTER_MS / 1000 - 1))).zombies).toBe(0);
      expect((await stepRow(stepId)).state).toBe("running");
      // Still silent a whole zombie timeout after the database came back: presumed dead.
      expect((await hk(at(200 + ZOMBIE_AFTER_MS / 1000))).zombies).toBe(1);
      expect(await tryClasses(stepId)).toEqual([[1, "failed", "infrastructure"]]);
    });

    it("leaves a user failure after infrastructure failures to the asset's retries alone", async () => {
      const { runId, stepId } = await oneStepRun(retries(1, 5_000));
      // Try 1: lost to infrastructure (re-run after 2 s). Try 2: lost again (6 s).
      await startTry(stepId, at(0));
      await parts.runs.completeSteps([failure(stepId, 1, at(1), "infrastructure", "WORKER_EXITED")], at(1), top);
      expect((await stepRow(stepId)).next_retry_at?.getTime()).toBe(at(3).getTime());
      await housekeeping(at(3));
      await startTry(stepId, at(3));
      await parts.runs.completeSteps([failure(stepId, 2, at(4), "infrastructure", "EXECUTOR_CLOSED")], at(4), top);
      expect((await stepRow(stepId)).next_retry_at?.getTime()).toBe(at(10).getTime());
      // Try 3: the user's code fails. retries: 1, none used yet: its retry comes after the asset's own delay.
      await housekeeping(at(10));
      await startTry(stepId, at(10));
      await parts.runs.completeSteps([failure(stepId, 3, at(11), "user", "USER_CODE_ERROR")], at(11), top);
      let step = await stepRow(stepId);
      expect(step.state).toBe("up_for_retry");
      expect(step.next_retry_at?.getTime()).toBe(at(16).getTime());
      expect(step.infrastructure_failures).toBe(2);
      // Try 4: the user's second failure is final.
      await housekeeping(at(16));
      await startTry(stepId, at(16));
      await parts.runs.completeSteps([failure(stepId, 4, at(17), "user", "USER_CODE_ERROR")], at(17), top);
      step = await stepRow(stepId);
      expect(step.state).toBe("failed");
      expect(errorIn(step).code).toBe("USER_CODE_ERROR");
      expect(await tryClasses(stepId)).toEqual([
        [1, "failed", "infrastructure"],
        [2, "failed", "infrastructure"],
        [3, "failed", "user"],
        [4, "failed", "user"],
      ]);
      expect((await parts.runs.getRunSummary(runId))?.status).toBe("failed");
    });

    it("fails the step once the infrastructure budget is spent, with an error naming the budget and the last cause", async () => {
      await use({ max: 2, delayMs: 1_000, maxDelayMs: 1_000 });
      const { runId, stepId } = await oneStepRun(retries(3));
      let now = 0;
      for (let n = 1; n <= 3; n++) {
        expect(await startTry(stepId, at(now))).toBe(n);
        await parts.runs.completeSteps([failure(stepId, n, at(now + 1), "infrastructure", `LOST_${n}`)], at(now + 1), top);
        now += 2;
        await housekeeping(at(now));
      }
      const step = await stepRow(stepId);
      expect(step.state).toBe("failed");
      expect(step.infrastructure_failures).toBe(2);
      const error = errorIn(step);
      expect(error.code).toBe("INFRASTRUCTURE_RETRIES_EXHAUSTED");
      expect(error.message).toContain("re-run 2 times after infrastructure failures, the budget TRIBUTARY_INFRASTRUCTURE_RETRIES allows");
      expect(error.message).toContain("[LOST_3] LOST_3 in try 3");
      expect(error.cause).toMatchObject({ code: "LOST_3" });
      // Each try keeps its own error; the asset's 3 retries were never touched.
      const run = await parts.runs.getRun(runId);
      expect(run?.status).toBe("failed");
      expect(run!.steps[0]!.tries.map((t) => [(t.error as unknown as SerializedError).code, t.failureClass])).toEqual([
        ["LOST_1", "infrastructure"],
        ["LOST_2", "infrastructure"],
        ["LOST_3", "infrastructure"],
      ]);
      const { rows: events } = await sql<{ metadata: { error: { code: string }; failureClass: string } }>`
        select metadata from events where kind = 'failure' and step_id = ${stepId}`.execute(parts.db);
      expect(events.map((e) => [e.metadata.error.code, e.metadata.failureClass])).toEqual([
        ["INFRASTRUCTURE_RETRIES_EXHAUSTED", "infrastructure"],
      ]);
    });

    it("with a budget of 0, fails an infrastructure failure at once, saying infrastructure failures are not re-run", async () => {
      await use({ max: 0, delayMs: 0, maxDelayMs: 0 });
      const { stepId } = await oneStepRun(retries(2));
      await startTry(stepId, at(0));
      await housekeeping(at(120));
      const step = await stepRow(stepId);
      expect(step.state).toBe("failed");
      expect(errorIn(step).message).toMatch(
        /^infrastructure failures are not re-run \(TRIBUTARY_INFRASTRUCTURE_RETRIES is 0\).*\[STEP_ZOMBIE\]/,
      );
    });

    it("fails a user failure of a step with no retries at once, as before", async () => {
      const { runId, stepId } = await oneStepRun(retries(0));
      await startTry(stepId, at(0));
      await parts.runs.completeSteps([failure(stepId, 1, at(1), "user", "USER_CODE_ERROR")], at(1), top);
      expect((await stepRow(stepId)).state).toBe("failed");
      expect(await tryClasses(stepId)).toEqual([[1, "failed", "user"]]);
      expect((await parts.runs.getRunSummary(runId))?.status).toBe("failed");
    });

    it("counts a try released after it started (the executor stopped under it) as an infrastructure failure", async () => {
      const { stepId } = await oneStepRun(retries(0));
      await startTry(stepId, at(0));
      const released: StepCompletion = {
        stepId,
        tryNumber: 1,
        startedAt: at(0),
        endedAt: at(1),
        workerId: "w-1",
        logRef: null,
        outcome: "released",
        error: { name: "TributaryError", code: "EXECUTOR_CLOSED", message: "the executor closed" },
      };
      await parts.runs.completeSteps([released], at(1), top);
      const step = await stepRow(stepId);
      expect([step.state, step.infrastructure_failures, step.tries_before]).toEqual(["up_for_retry", 1, 1]);
      expect(await tryClasses(stepId)).toEqual([[1, "failed", "infrastructure"]]);
    });

    it("records a queued timeout as an infrastructure failure that uses up neither budget", async () => {
      await use({ max: 0, delayMs: 0, maxDelayMs: 0 });
      const { stepId } = await oneStepRun(retries(0));
      await parts.runs.claimRunnable({ now: at(0), capacity: { local: 10 }, limit: 10 });
      // Handed out, never started: the executor (or the queue in Redis) lost it.
      expect((await housekeeping(at(400))).requeued).toBe(1);
      const step = await stepRow(stepId);
      expect([step.state, step.infrastructure_failures]).toEqual(["scheduled", 0]);
      expect(await tryClasses(stepId)).toEqual([[1, "failed", "infrastructure"]]);
      // Nothing of the user's ran, so even a budget of 0 lets the next try run.
      expect(await startTry(stepId, at(401))).toBe(2);
      await parts.runs.completeSteps([success(stepId, 2, at(402))], at(402));
      expect((await stepRow(stepId)).state).toBe("success");
    });

    describe("steps held by a reconciler", () => {
      const HOLDER_DEAD_AFTER_MS = 30_000;
      const sweep = (now: Date) =>
        parts.runs.housekeeping({
          now,
          zombieAfterMs: ZOMBIE_AFTER_MS,
          queuedTimeoutMs: QUEUED_TIMEOUT_MS,
          holderDeadAfterMs: HOLDER_DEAD_AFTER_MS,
          random: top,
        });
      const holdBy = async (id: string, now: Date) => {
        await parts.runs.holderAlive({ id, hostname: "h", pid: 7 });
        return parts.runs.claimRunnable({ now, capacity: { local: 10, bullmq: 10 }, limit: 10, holder: { id, kinds: ["local"] } });
      };
      const silence = (id: string) =>
        sql`update component_heartbeats set heartbeat_at = now() - interval '31 seconds' where id = ${id}`.execute(parts.db);
      const activeSteps = async (runId: string) =>
        (await parts.db.selectFrom("runs").select("steps_active").where("id", "=", runId).executeTakeFirstOrThrow()).steps_active;

      it("hands a queued step out again once its reconciler stops heartbeating, using up neither budget", async () => {
        await use({ max: 0, delayMs: 0, maxDelayMs: 0 });
        const { runId, stepId } = await oneStepRun(retries(0));
        expect((await holdBy("r-1", at(0))).map((c) => c.stepId)).toEqual([stepId]);
        expect((await stepRow(stepId)).worker_id).toBe("r-1");
        // Alive: its step stays queued, however long it has been.
        expect((await sweep(at(20))).holderLost).toBe(0);
        await silence("r-1");
        expect((await sweep(at(40))).holderLost).toBe(1);
        const step = await stepRow(stepId);
        expect([step.state, step.infrastructure_failures, step.tries_before]).toEqual(["scheduled", 0, 1]);
        expect(await activeSteps(runId)).toBe(0);
        const tried = await parts.db
          .selectFrom("step_tries")
          .select(["state", "failure_class", "error"])
          .where("step_id", "=", stepId)
          .execute();
        expect(tried.map((t) => [t.state, t.failure_class, (t.error as unknown as SerializedError).code])).toEqual([
          ["failed", "infrastructure", "STEP_RECONCILER_LOST"],
        ]);
        expect((tried[0]!.error as unknown as SerializedError).message).toContain("reconciler r-1");
        // The next try runs, and the run succeeds although the budget is 0 and retries are 0.
        expect(await startTry(stepId, at(41))).toBe(2);
        await parts.runs.completeSteps([success(stepId, 2, at(42))], at(42));
        expect((await stepRow(stepId)).state).toBe("success");
      });

      it("hands out at once what a reconciler that stopped still held", async () => {
        const { stepId } = await oneStepRun(retries(0));
        await holdBy("r-2", at(0));
        await parts.runs.holderStopped("r-2");
        expect((await sweep(at(1))).holderLost).toBe(1);
        expect((await stepRow(stepId)).state).toBe("scheduled");
      });

      it("leaves alone steps that started, and queued steps nobody holds (a queue has them)", async () => {
        const started = await oneStepRun(retries(0));
        await holdBy("r-3", at(0));
        await parts.runs.markStarted(
          [{ stepId: started.stepId, tryNumber: 1, workerId: "local:h:7", hostname: "h", pid: 7, startedAt: at(0) }],
          at(0),
        );
        const queued = await oneStepRun(retries(0));
        await parts.runs.claimRunnable({ now: at(1), capacity: { local: 10 }, limit: 10 });
        expect((await stepRow(queued.stepId)).worker_id).toBeNull();
        await silence("r-3");
        expect((await sweep(at(40))).holderLost).toBe(0);
        expect([(await stepRow(started.stepId)).state, (await stepRow(queued.stepId)).state]).toEqual(["running", "queued"]);
      });

      it("moves a lost step once when two reconcilers sweep at the same time", async () => {
        const { stepId } = await oneStepRun(retries(0));
        await holdBy("r-4", at(0));
        await silence("r-4");
        const [a, b] = await Promise.all([sweep(at(40)), sweep(at(40))]);
        expect(a.holderLost + b.holderLost).toBe(1);
        expect(await tryClasses(stepId)).toEqual([[1, "failed", "infrastructure"]]);
      });
    });

    it("gives a cleared mapped step a fresh infrastructure budget, as it gets fresh retries", async () => {
      await use({ max: 1, delayMs: 0, maxDelayMs: 0 });
      const { runId, stepId: parent } = await oneStepRun(retries(0));
      await startTry(parent, at(0));
      await parts.runs.completeSteps(
        [
          {
            stepId: parent,
            tryNumber: 1,
            startedAt: at(0),
            endedAt: at(1),
            workerId: "w-1",
            logRef: null,
            outcome: "expanded",
            itemsJson: "[1]",
            labels: null,
            count: 1,
            codeVersion: null,
            inputs: [],
          },
        ],
        at(1),
      );
      const mapped = await parts.db
        .selectFrom("steps")
        .select("id")
        .where("run_id", "=", runId)
        .where("map_index", "=", 0)
        .executeTakeFirstOrThrow();
      const mappedId = Number(mapped.id);
      await startTry(mappedId, at(2));
      await parts.runs.completeSteps([failure(mappedId, 1, at(3), "infrastructure", "WORKER_EXITED")], at(3), top);
      expect((await stepRow(mappedId)).infrastructure_failures).toBe(1);
      await housekeeping(at(4));
      await startTry(mappedId, at(4));
      await parts.runs.completeSteps([success(mappedId, 2, at(5))], at(5));
      expect((await parts.runs.getRunSummary(runId))?.status).toBe("success");

      await parts.runs.clearMappedStep({ runId, assetKey: "a/one", partitionKey: "", mapIndex: 0 }, at(6));
      const cleared = await stepRow(mappedId);
      expect([cleared.state, cleared.tries_before, cleared.infrastructure_failures]).toEqual(["scheduled", 2, 0]);
      // Its budget of 1 is whole again: an infrastructure failure of try 3 runs again.
      await startTry(mappedId, at(7));
      await parts.runs.completeSteps([failure(mappedId, 3, at(8), "infrastructure", "WORKER_EXITED")], at(8), top);
      expect((await stepRow(mappedId)).state).toBe("up_for_retry");
    });
  });
}
