import { randomUUID } from "node:crypto";
import { stat, unlink } from "node:fs/promises";
import path from "node:path";
import type { AssetGraph, SnapshotAsset } from "../../graph/index.js";
import { loadPartitionContext, partitionSpace, type PartitionSpace } from "../../partitions/index.js";
import type { EraseContext, EraseHook } from "../../sdk/index.js";
import {
  decodeArchive,
  deleteQueuedObjects,
  encodeArchive,
  HISTORY_ARCHIVE_CONTENT_TYPE,
  historyArchiveKey,
  type ArchivedLog,
  type BackfillStatus,
  type DefinitionStore,
  type ErasureRequestRecord,
  type ErasureStore,
  type ErasureTryLog,
  type GraphCache,
  type HistoryArchiveStore,
  type LineageStore,
  type OutputDeletionStore,
  type OutputStore,
  type ScrubbedLog,
} from "../../storage/index.js";
import type { ReconcilerTask } from "../reconciler.js";

/** How long a claimed request is this process's before another may take it (renewed while it works). */
const LEASE_MS = 60_000;
/** The most partitions one refreshed impact lists (as erasureImpact's answers). */
const MAX_IMPACT = 100_000;
/** Partitions erased per transaction. */
const BATCH = 1_000;
/** How soon a request that waits (a run writing its partitions, objects still queued, its backfill) is looked at again. */
const WAIT_MS = 2_000;

/** Partitions to re-materialise, per asset in dependency order: a backfill's `assetPartitions`. */
export interface Rematerialisation {
  readonly requestId: string;
  readonly assetKeys: readonly string[];
  readonly assetPartitions: readonly { readonly assetKey: string; readonly partitionKeys: readonly string[] }[];
}

/** How the task re-materialises erased partitions: through backfills. */
export interface RematerialisationBackfills {
  /** Launches the backfill (its checks may refuse it: an Error saying why); answers its id. */
  launch(request: Rematerialisation): Promise<string>;
  status(backfillId: string): Promise<BackfillStatus | undefined>;
}

export interface ErasureTaskOptions {
  readonly store: ErasureStore;
  readonly deletions: OutputDeletionStore;
  /** This process's object store; without one, objects are left to a process that has one. */
  readonly outputStore: OutputStore | null;
  /** Where try logs are written; a log outside it is never deleted. */
  readonly logsDir: string;
  /** Archived history: the try logs of impacted partitions that archives hold are removed from them too. */
  readonly archives?: Pick<HistoryArchiveStore, "archivesWithLogs" | "scrubLogs">;
  readonly graphs: Pick<GraphCache, "current">;
  /** The impact again before the request is done with erasing: what read the source since it was recorded. */
  readonly lineage: Pick<LineageStore, "erasureImpact">;
  readonly definitions: Pick<DefinitionStore, "listDynamicPartitions">;
  readonly backfills: RematerialisationBackfills;
  /** The asset's `erase` hook, imported from its definitions file at its code version (undefined: it has none). */
  readonly importHook: (asset: SnapshotAsset) => Promise<EraseHook | undefined>;
  readonly owner?: string;
  /** At most this often (default 2 s): a pass with no request due costs one indexed statement. */
  readonly intervalMs?: number;
  readonly log?: (level: "info" | "warn" | "error", message: string) => void;
}

/** A hook failed: the request fails with this message. */
class HookFailed extends Error {}

/**
 * Carries out erasure requests, one at a time per reconciler, each under a lease (so two reconcilers never work on
 * the same request, and one that dies leaves it to another after the lease): deletes the impacted partitions'
 * outputs (their objects through the deletion queue) and try logs and marks them erased, waiting while a run writes
 * one of them; calls each impacted asset's `erase` hook once; then re-materialises the partitions that still exist
 * through a backfill and records which materialisation replaced each. Every step is recorded, so a request taken
 * over or retried goes on where it stopped: what is gone is not deleted again, and what remains is found again.
 *
 * The work runs beside the reconciler's passes (a hook may take minutes), never inside one.
 */
export class ErasureTask implements ReconcilerTask {
  readonly name = "erasures";
  readonly #owner: string;
  #working: Promise<void> | undefined;
  #lastRun = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: ErasureTaskOptions) {
    this.#owner = options.owner ?? `erasure-${process.pid}-${randomUUID().slice(0, 8)}`;
  }

  run(now: Date): Promise<void> {
    const since = now.getTime() - this.#lastRun;
    if (since >= 0 && since < (this.options.intervalMs ?? 2_000)) return Promise.resolve();
    if (!this.#working) {
      this.#lastRun = now.getTime();
      this.#working = this.work(now)
        .catch((error: unknown) => this.options.log?.("error", `erasure requests: ${(error as Error).message ?? String(error)}`))
        .finally(() => {
          this.#working = undefined;
        });
    }
    return Promise.resolve();
  }

  /** Until the current work ends (tests, shutdown). */
  async idle(): Promise<void> {
    await this.#working;
  }

  /** Advances every due request as far as it goes now. */
  async work(now: Date = new Date()): Promise<void> {
    for (;;) {
      const request = await this.options.store.claim(this.#owner, LEASE_MS, now);
      if (!request) return;
      await this.#holding(request, () => this.#advance(request));
      now = new Date();
    }
  }

  /** Keeps the lease while `work` runs. */
  async #holding(request: ErasureRequestRecord, work: () => Promise<void>): Promise<void> {
    const timer = setInterval(() => {
      void this.options.store.renew(request.id, this.#owner, LEASE_MS, new Date()).catch(() => undefined);
    }, LEASE_MS / 3);
    timer.unref();
    try {
      await work();
    } catch (error) {
      // Infrastructure (the database, the object store) blinked: the request is taken again shortly, where it stopped.
      const message = (error as Error).message ?? String(error);
      this.options.log?.("warn", `erasure request ${request.id}: ${message}; trying again shortly`);
      await this.options.store
        .release(
          request.id,
          this.#owner,
          { message: `interrupted, going on shortly: ${message}`, nextAttemptAt: new Date(Date.now() + WAIT_MS) },
          new Date(),
        )
        .catch(() => undefined);
    } finally {
      clearInterval(timer);
    }
  }

  async #advance(request: ErasureRequestRecord): Promise<void> {
    const { store } = this.options;
    if (request.state === "planned" || request.state === "erasing") {
      const waiting = await this.#erase(request);
      if (waiting !== null) {
        await store.release(
          request.id,
          this.#owner,
          { state: "erasing", message: waiting, nextAttemptAt: new Date(Date.now() + WAIT_MS) },
          new Date(),
        );
        return;
      }
      try {
        await this.#callHooks(request);
      } catch (error) {
        if (!(error instanceof HookFailed)) throw error;
        await store.release(request.id, this.#owner, { state: "failed", message: error.message }, new Date());
        this.options.log?.("warn", `erasure request ${request.id} failed: ${error.message}`);
        return;
      }
      const launched = await this.#rematerialise(request);
      await store.release(request.id, this.#owner, launched, new Date());
      return;
    }
    if (request.state === "rematerialising") {
      if (request.backfillId === null) {
        await store.release(request.id, this.#owner, await this.#rematerialise(request), new Date());
        return;
      }
      const status = (await this.options.backfills.status(request.backfillId)) ?? "failed";
      if (status === "completed") {
        await store.recordReplacements(request.id, new Date());
        await store.release(request.id, this.#owner, { state: "done", message: null }, new Date());
      } else if (status === "failed" || status === "canceled") {
        await store.recordReplacements(request.id, new Date());
        await store.release(
          request.id,
          this.#owner,
          { state: "failed", message: `the re-materialisation backfill ${request.backfillId} ${status}; retry to launch it again` },
          new Date(),
        );
      } else {
        await store.recordReplacements(request.id, new Date());
        await store.release(request.id, this.#owner, { nextAttemptAt: new Date(Date.now() + WAIT_MS) }, new Date());
      }
    }
  }

  /** Deletes what the pending items hold; a message when the request must wait, else null (all erased, objects gone). */
  async #erase(request: ErasureRequestRecord): Promise<string | null> {
    const { store } = this.options;
    const graph = (await this.options.graphs.current()).graph;
    // The source and every asset reading it: a step of one of them that has not finished may be writing data read from
    // the old source, so nothing is erased while one runs.
    const guardedAssets = graph.has(request.assetKey) ? [request.assetKey, ...graph.descendants(request.assetKey)] : [request.assetKey];
    for (;;) {
      const items = await store.pendingItems(request.id, BATCH);
      // Nothing left: once more what read the source, which a run that ended since it was recorded may have added to.
      if (items.length === 0 && (await this.#addNewlyImpacted(request, graph)) === 0) break;
      const byAsset = new Map<string, string[]>();
      for (const item of items) byAsset.set(item.assetKey, [...(byAsset.get(item.assetKey) ?? []), item.partitionKey]);
      for (const [assetKey, keys] of byAsset) {
        const waiting = await this.#scrubArchives(request.id, assetKey, keys);
        if (waiting !== null) return waiting;
        const batch = await store.eraseBatch(request.id, { assetKey, partitionKeys: keys, guardedAssets }, new Date());
        if (batch.kind === "busy") return batch.message;
        await store.recordLogs(request.id, await this.#deleteLogs(batch.logs), new Date());
        if (batch.objectDeletions.length > 0) {
          await deleteQueuedObjects(this.options.deletions, this.options.outputStore, new Date(), {
            ids: batch.objectDeletions.map((d) => d.id),
          });
        }
      }
    }
    // Objects that could not be deleted at once: the deletion queue goes on with them; the request waits for it.
    const objects = await store.settleObjects(request.id, new Date());
    if (objects.pending > 0) {
      await deleteQueuedObjects(this.options.deletions, this.options.outputStore, new Date(), { limit: 100 });
      const again = await store.settleObjects(request.id, new Date());
      if (again.pending > 0) {
        return `waiting for ${again.pending} object(s) to be deleted from the object store${again.lastError ? ` (${again.lastError})` : ""}`;
      }
    }
    return null;
  }

  /** Adds the partitions that read the source (transitively) and that the request does not name yet. */
  async #addNewlyImpacted(request: ErasureRequestRecord, graph: AssetGraph): Promise<number> {
    const rows = await this.options.lineage.erasureImpact({
      assetKey: request.assetKey,
      partitionKeys: request.partitionKeys,
      limit: MAX_IMPACT,
    });
    const source = graph.get(request.assetKey);
    const impacted = [...(source?.kind === "asset" ? rows.sources : []), ...rows.impacted];
    return this.options.store.addItems(
      request.id,
      impacted.map((p) => ({ assetKey: p.assetKey, partitionKey: p.partitionKey, eventId: p.eventId, runId: p.runId, stepId: p.stepId })),
    );
  }

  /**
   * Removes the partitions' try logs from the history archives that hold them (runs archived past their retention):
   * each archive is written again without them, under its row lock. A message when the request must wait (no output
   * store in this process), else null.
   */
  async #scrubArchives(requestId: string, assetKey: string, keys: readonly string[]): Promise<string | null> {
    const archives = this.options.archives;
    if (!archives) return null;
    const held = await archives.archivesWithLogs(assetKey, keys);
    if (held.length === 0) return null;
    const objects = this.options.outputStore;
    if (!objects) return `waiting for a reconciler with the output store: ${held.length} history archive(s) hold logs of "${assetKey}"`;
    const wanted = new Set(keys);
    for (const archive of held) {
      await archives.scrubLogs(
        archive.id,
        { requestId, assetKey, partitionKeys: keys },
        async (ref) => {
          const content = await decodeArchive(await objects.getBytes(ref), ref);
          const steps = new Map(
            content.rows.steps.map((row) => {
              const s = JSON.parse(row) as { id: number; asset_key: string; partition_key: string };
              return [String(s.id), s] as const;
            }),
          );
          const removed: ScrubbedLog[] = [];
          const kept: ArchivedLog[] = [];
          for (const log of content.logs) {
            const [stepId = "", tryNumber = ""] = log.file.replace(/\.log$/, "").split("-");
            const step = steps.get(stepId);
            if (step?.asset_key === assetKey && wanted.has(step.partition_key)) {
              removed.push({
                assetKey,
                partitionKey: step.partition_key,
                runId: log.run,
                stepId: Number(stepId),
                tryNumber: Number(tryNumber),
                sizeBytes: Buffer.byteLength(log.text),
              });
            } else kept.push(log);
          }
          if (removed.length === 0) return { removed, sizeBytes: 0 };
          const body = await encodeArchive(archive.day, archive.id, { rows: content.rows, logs: kept });
          const written = await objects.putBytes(historyArchiveKey(archive.day, archive.id), body, HISTORY_ARCHIVE_CONTENT_TYPE);
          if (written !== ref) {
            throw new Error(
              `history archive ${ref} cannot be written again by this process, whose output store writes it as ${written}: ` +
                `configure the output store the archive was written to`,
            );
          }
          return { removed, sizeBytes: body.byteLength };
        },
        new Date(),
      );
    }
    return null;
  }

  /** Deletes the tries' log files; each with the size it had (null: the try wrote none). */
  async #deleteLogs(logs: readonly ErasureTryLog[]): Promise<(ErasureTryLog & { sizeBytes: number | null })[]> {
    const root = path.resolve(this.options.logsDir);
    const out: (ErasureTryLog & { sizeBytes: number | null })[] = [];
    for (const log of logs) {
      const file = path.resolve(log.logRef ?? path.join(root, log.runId, `${log.stepId}-${log.tryNumber}.log`));
      if (!file.startsWith(root + path.sep)) {
        out.push({ ...log, sizeBytes: null });
        continue;
      }
      let size: number | null = null;
      try {
        size = (await stat(file)).size;
        await unlink(file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      }
      out.push({ ...log, sizeBytes: size });
    }
    return out;
  }

  /** Calls the erase hook of each impacted asset that has one and has not returned for this request yet. */
  async #callHooks(request: ErasureRequestRecord): Promise<void> {
    const { store } = this.options;
    const graph = (await this.options.graphs.current()).graph;
    const report = await store.report(request.id);
    if (!report) return;
    const done = await store.hooksDone(request.id);
    const byAsset = new Map<string, string[]>();
    for (const item of report.items) byAsset.set(item.assetKey, [...(byAsset.get(item.assetKey) ?? []), item.partitionKey]);
    const ordered = graph.topologicalOrder([...byAsset.keys()].filter((k) => graph.has(k)));
    for (const assetKey of ordered) {
      const asset = graph.get(assetKey)!;
      if (!asset.erase || done.has(assetKey)) continue;
      const partitions = byAsset.get(assetKey)!;
      const hook = await this.options.importHook(asset).catch((error: unknown) => {
        throw new HookFailed(`the erase hook of "${assetKey}" could not be loaded: ${(error as Error).message ?? String(error)}`);
      });
      if (!hook) throw new HookFailed(`"${assetKey}" declares an erase hook, but its definitions file no longer exports one`);
      const callId = await store.hookStarted(request.id, assetKey, partitions, new Date());
      const lines: string[] = [];
      const error = await callHook(hook, asset.erase.timeoutMs, {
        assetKey,
        requestId: request.id,
        reason: request.reason,
        source: { assetKey: request.assetKey, partitionKeys: request.partitionKeys },
        log: (message: string) => {
          lines.push(String(message));
        },
        partitions,
      });
      await store.hookEnded(callId, { error, log: lines }, new Date());
      if (error !== null) throw new HookFailed(`the erase hook of "${assetKey}" failed: ${error}; retry the request once it is fixed`);
    }
  }

  /** Launches the backfill that re-materialises the erased partitions that still exist: the request's next state. */
  async #rematerialise(request: ErasureRequestRecord) {
    const { store } = this.options;
    const graph = (await this.options.graphs.current()).graph;
    const report = await store.report(request.id);
    const items = report?.items ?? [];
    const skipped: { assetKey: string; partitionKey: string; reason: string }[] = [];
    const groups = new Map<string, string[]>();
    const spaces = new Map<string, PartitionSpace | null | string>();
    for (const item of items) {
      const reason = await this.#cannotRematerialise(graph, spaces, item.assetKey, item.partitionKey);
      if (reason !== null) skipped.push({ assetKey: item.assetKey, partitionKey: item.partitionKey, reason });
      else groups.set(item.assetKey, [...(groups.get(item.assetKey) ?? []), item.partitionKey]);
    }
    await store.skipItems(request.id, skipped);
    if (groups.size === 0) return { state: "done" as const, message: null };
    const assetKeys = graph.topologicalOrder([...groups.keys()]);
    try {
      const backfillId = await this.options.backfills.launch({
        requestId: request.id,
        assetKeys,
        assetPartitions: assetKeys.map((k) => ({ assetKey: k, partitionKeys: groups.get(k)! })),
      });
      return { state: "rematerialising" as const, backfillId, message: null };
    } catch (error) {
      return {
        state: "failed" as const,
        message: `the data is erased, but the re-materialisation could not be launched: ${(error as Error).message ?? String(error)}; retry once it can`,
      };
    }
  }

  /** Why a partition is not re-materialised (null: it is); each asset's partitions are loaded once per request. */
  async #cannotRematerialise(
    graph: AssetGraph,
    spaces: Map<string, PartitionSpace | null | string>,
    assetKey: string,
    partitionKey: string,
  ): Promise<string | null> {
    if (!spaces.has(assetKey)) {
      const asset = graph.get(assetKey);
      if (!asset) spaces.set(assetKey, "the asset is no longer defined");
      else if (asset.kind === "source") spaces.set(assetKey, "a source asset is observed, not materialised");
      else if (!asset.partitions) spaces.set(assetKey, null);
      else {
        const ctx = await loadPartitionContext([asset.partitions], (name) => this.options.definitions.listDynamicPartitions(name));
        spaces.set(assetKey, partitionSpace(asset.partitions, ctx));
      }
    }
    const space = spaces.get(assetKey)!;
    if (typeof space === "string") return space;
    if (space === null) return null;
    try {
      space.indexOf(partitionKey);
      return null;
    } catch {
      return "the partition no longer exists";
    }
  }
}

/** Calls a hook within its time limit: null when it returned, else what went wrong. */
async function callHook(
  hook: EraseHook,
  timeoutMs: number,
  context: Omit<EraseContext, "signal"> & { readonly partitions: readonly string[] },
): Promise<string | null> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<string>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve(`it did not return within ${Math.round(timeoutMs / 1000)} s (eraseTimeout)`);
    }, timeoutMs);
  });
  const { partitions, ...rest } = context;
  const ctx: EraseContext = Object.freeze({ ...rest, signal: controller.signal });
  try {
    return await Promise.race([
      Promise.resolve()
        .then(() => hook(ctx, Object.freeze({ partitions: [...partitions] })))
        .then(
          () => null,
          (error: unknown) => (error instanceof Error ? error.message : String(error)),
        ),
      timedOut,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
