import { serializeError, type SerializedError } from "../../errors/index.js";
import type { AssetGraph } from "../../graph/index.js";
import { PartitionSubset, type PartitionContext } from "../../partitions/index.js";
import { layoutVersion, parseLayout, type BackfillChunks, type BackfillLayout } from "../../planner/index.js";
import type { BackfillCursor, BackfillStatus, BackfillTransaction, RunProgress, UnsuccessfulStep } from "../../storage/index.js";
import { chunkRun, Keyer, push, toSubsets, type ChunkOutcome } from "./chunk-run.js";

const ENDED_RUN = new Set(["success", "failed", "canceled"]);

export interface AdvanceContext {
  readonly graph: AssetGraph;
  readonly version: number;
  readonly ctx: PartitionContext | undefined;
  readonly now: Date;
  /** The chunking of a layout (cached by the task across passes). */
  readonly chunksOf: (backfillId: string, layout: BackfillLayout) => BackfillChunks;
  readonly log: (level: "info" | "warn" | "error", message: string) => void;
}

/**
 * One step of one backfill, inside the transaction holding its row lock:
 * 1. runs that ended are settled into the counts (their unsuccessful steps
 *    into the failed partitions; a run canceled with the backfill puts its
 *    chunk on the redo list instead);
 * 2. a canceling backfill asks its runs to cancel and becomes canceled when
 *    none is left;
 * 3. otherwise chunks are turned into runs, oldest first, until
 *    maxConcurrentRuns are in flight or the next chunk must wait;
 * 4. a backfill with nothing left to create or wait for is completed (or
 *    failed, when partitions failed).
 * Cursor, counts and status are saved in the same transaction as the runs,
 * and only when something changed: the loop calls this on every wake-up.
 */
export async function advanceBackfill(tx: BackfillTransaction, a: AdvanceContext): Promise<void> {
  const b = tx.backfill;
  // This reconciler's graph is older than the backfill (its cache refreshes
  // within a second): judged against it, new assets would look removed.
  if (a.version < layoutVersion(b.partitions)) return;
  const cursor: Mutable<BackfillCursor> = { ...b.cursor, active: [...b.cursor.active], redo: [...b.cursor.redo] };
  let error: SerializedError | null | undefined;

  let layout: BackfillLayout | undefined;
  try {
    layout = parseLayout(b.partitions, b.maxPartitionsPerRun, a.graph);
  } catch (err) {
    // Definitions changed under the backfill: finish what runs, create nothing more.
    if (!cursor.halted) {
      const { stack: _stack, ...why } = serializeError(err);
      cursor.halted = why;
    }
  }
  const keyer = new Keyer(a.graph, a.ctx);

  // 1. Settle the runs that ended.
  const progress = new Map((await tx.runProgress(cursor.active.map((r) => r.runId))).map((p) => [p.runId, p]));
  const ended = cursor.active.filter((r) => {
    const p = progress.get(r.runId);
    return !p || ENDED_RUN.has(p.status);
  });
  if (ended.length > 0) {
    const unsuccessful = await tx.unsuccessfulSteps(ended.map((r) => r.runId).filter((id) => progress.has(id)));
    const failedIndices = new Map<string, number[]>();
    for (const r of ended) {
      const p = progress.get(r.runId);
      if (!p) {
        a.log("warn", `backfill ${b.id}: run ${r.runId} of chunk ${r.chunk} no longer exists; its partitions are not counted`);
        continue;
      }
      if (p.status === "canceled" && b.status === "canceling") {
        cursor.redo.push(r.chunk);
        continue;
      }
      const failures = unsuccessful.filter((s) => s.runId === r.runId && isFailure(s));
      cursor.done += p.stepsTotal - failures.length;
      cursor.failed += failures.length;
      for (const f of failures) {
        const index = keyer.index(f.assetKey, f.partitionKey);
        if (index !== undefined) push(failedIndices, f.assetKey, index);
      }
    }
    cursor.failedPartitions = addFailed(cursor.failedPartitions, toSubsets(failedIndices));
    const endedIds = new Set(ended.map((r) => r.runId));
    cursor.active = cursor.active.filter((r) => !endedIds.has(r.runId));
    cursor.redo.sort((x, y) => x - y);
  }

  let status: BackfillStatus = b.status === "requested" ? "running" : b.status;
  if (b.status === "canceling") {
    await tx.cancelRuns(
      cursor.active.map((r) => r.runId),
      a.now,
    );
    cursor.waiting = null;
    if (cursor.active.length === 0) status = "canceled";
  } else if (layout && !cursor.halted) {
    // 3. Create runs, oldest chunks first.
    const chunks = a.chunksOf(b.id, layout);
    cursor.chunks = chunks.count;
    cursor.waiting = null;
    while (cursor.active.length < b.maxConcurrentRuns) {
      const fromRedo = cursor.redo.length > 0;
      const k = fromRedo ? cursor.redo[0]! : cursor.next;
      if (!fromRedo && k >= chunks.count) break;
      const outcome: ChunkOutcome = await chunkRun(
        { tx, graph: a.graph, version: a.version, chunks, ctx: a.ctx, now: a.now },
        k,
        cursor.generation,
      );
      if (outcome.kind === "wait") {
        cursor.waiting = outcome.reason;
        break;
      }
      if (fromRedo) cursor.redo.shift();
      else cursor.next++;
      if (outcome.kind === "unplannable") {
        a.log("warn", `backfill ${b.id}: ${outcome.message}`);
        error = { name: "BackfillChunkError", code: "PLAN_MISSING_UPSTREAM", message: outcome.message };
        cursor.failed += count(outcome.partitions);
        cursor.failedPartitions = addFailed(cursor.failedPartitions, outcome.partitions);
        continue;
      }
      cursor.done += outcome.covered;
      cursor.covered += outcome.covered;
      cursor.failed += count(outcome.blocked);
      cursor.failedPartitions = addFailed(cursor.failedPartitions, outcome.blocked);
      if (outcome.kind === "run") {
        cursor.active.push({ chunk: k, runId: outcome.runId });
        cursor.runsCreated++;
        progress.set(outcome.runId, { runId: outcome.runId, status: "running", stepsTotal: outcome.steps, stepsDone: 0, stepsFailed: 0 });
      }
    }
  }

  // 4. Done when nothing is left to run or wait for.
  const finished = cursor.active.length === 0 && (cursor.halted !== null || (cursor.next >= cursor.chunks && cursor.redo.length === 0));
  if (status === "running" && finished) {
    status = cursor.halted !== null || cursor.failed > 0 ? "failed" : "completed";
    if (cursor.halted) error = cursor.halted;
  }
  const live = liveCounts(cursor.active.map((r) => progress.get(r.runId)).filter((p): p is RunProgress => p !== undefined));
  const update = {
    status,
    cursor,
    done: cursor.done + live.done,
    failed: cursor.failed + live.failed,
    inProgress: live.inProgress,
    ...(error !== undefined ? { error } : {}),
  };
  const changed =
    update.status !== b.status ||
    update.done !== b.done ||
    update.failed !== b.failed ||
    update.inProgress !== b.inProgress ||
    error !== undefined ||
    JSON.stringify(cursor) !== JSON.stringify(b.cursor);
  if (changed) await tx.save(update, a.now);
  if (status !== b.status && (status === "completed" || status === "failed" || status === "canceled")) {
    a.log("info", `backfill ${b.id} ${status}: ${update.done} done, ${update.failed} failed of ${b.requested}`);
  }
}

/** A step that ended without materialising its partition, and not by choice (a trigger-rule skip is a choice). */
function isFailure(s: UnsuccessfulStep): boolean {
  if (s.state === "failed" || s.state === "upstream_failed" || s.state === "removed") return true;
  return s.state === "skipped" && s.skipReason === "run canceled";
}

function liveCounts(runs: readonly RunProgress[]): { done: number; failed: number; inProgress: number } {
  let done = 0;
  let failed = 0;
  let inProgress = 0;
  for (const r of runs) {
    done += r.stepsDone - r.stepsFailed;
    failed += r.stepsFailed;
    inProgress += r.stepsTotal - r.stepsDone;
  }
  return { done, failed, inProgress };
}

function count(subsets: ReadonlyMap<string, PartitionSubset>): number {
  let n = 0;
  for (const s of subsets.values()) n += s.count();
  return n;
}

function addFailed(stored: Readonly<Record<string, string>>, more: ReadonlyMap<string, PartitionSubset>): Record<string, string> {
  if (more.size === 0) return { ...stored };
  const out: Record<string, string> = { ...stored };
  for (const [key, subset] of more) {
    if (subset.isEmpty()) continue;
    out[key] = PartitionSubset.parse(out[key] ?? "")
      .union(subset)
      .serialize();
  }
  return out;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] extends readonly (infer U)[] ? U[] : T[K] };
