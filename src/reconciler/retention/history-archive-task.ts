import { randomUUID } from "node:crypto";
import {
  encodeArchive,
  HISTORY_ARCHIVE_CONTENT_TYPE,
  historyArchiveKey,
  readRunLogs,
  removeRunLogs,
  type GraphCache,
  type HistoryArchiveStore,
  type HistoryRetentionPolicy,
  type ArchivedLog,
  type OutputStore,
} from "../../storage/index.js";
import type { ReconcilerTask } from "../reconciler.js";

export interface HistoryArchiveTaskOptions {
  readonly store: HistoryArchiveStore;
  /** Where archives are written; without one (a process with no output store) the task does nothing. */
  readonly outputStore: OutputStore | null;
  /** Where try logs are (`<logsDir>/<run>/<step>-<try>.log`): archived with their runs. */
  readonly logsDir: string;
  /** Runs that ended longer ago are archived; undefined: only those of assets with `retention.history`. */
  readonly retentionMs: number | undefined;
  /** The current definitions, for the assets' own retention. */
  readonly graphs?: Pick<GraphCache, "current">;
  /** At most this often while nothing is due (default 60 s). */
  readonly intervalMs?: number;
  /** Runs (and events of no run) per archive object (default 500): one short transaction each way. */
  readonly batch?: number;
  /** Archives written per pass at most (default 20); a pass with more due goes on at the next. */
  readonly maxBatches?: number;
  /** An archive left writing this long was abandoned by its archiver (default 1 h). */
  readonly abandonedAfterMs?: number;
  readonly owner?: string;
  readonly log?: (level: "info" | "warn" | "error", message: string) => void;
}

/** The partitions of the steps whose try logs are among `logs` (steps given as the rows' JSON). */
function logPartitions(steps: readonly string[], logs: readonly ArchivedLog[]): { assetKey: string; partitionKey: string }[] {
  const withLogs = new Set(logs.map((l) => Number(l.file.split("-")[0])));
  const out = new Map<string, { assetKey: string; partitionKey: string }>();
  for (const row of steps) {
    const s = JSON.parse(row) as { id: number; asset_key: string; partition_key: string };
    if (withLogs.has(Number(s.id)))
      out.set(`${s.asset_key}\u0000${s.partition_key}`, { assetKey: s.asset_key, partitionKey: s.partition_key });
  }
  return [...out.values()];
}

/** How often events left by archived runs (a partition's latest then, superseded since) are looked for. */
const ORPHANS_EVERY_MS = 86_400_000;

/** What one pass archived. */
export interface ArchivePass {
  readonly archives: number;
  readonly runs: number;
  readonly events: number;
  readonly rows: number;
  readonly logs: number;
  readonly bytes: number;
}

/**
 * History retention (TRIBUTARY_HISTORY_RETENTION, and per asset `retention.history`): runs, steps, tries, waits,
 * events, lineage rows, check results and logs past their retention are written to the output store as gzip JSON
 * Lines, an object per batch of one day, then deleted (see HistoryArchiveStore for what is always kept). The work runs
 * beside the reconciler's passes. Any number of reconcilers may run it: each batch is claimed by one.
 */
export class HistoryArchiveTask implements ReconcilerTask {
  readonly name = "history-archive";
  readonly #owner: string;
  #lastRun = Number.NEGATIVE_INFINITY;
  #working: Promise<void> | undefined;
  /** The last pass stopped at its limit: the next one starts without waiting for the interval. */
  #more = false;
  /** When events left by archived runs were last looked for (at the first pass, then daily). */
  #orphansAt = Number.NEGATIVE_INFINITY;
  /** Said once that there is nowhere to archive to. */
  #warned = false;

  constructor(private readonly options: HistoryArchiveTaskOptions) {
    this.#owner = options.owner ?? `archive-${process.pid}-${randomUUID().slice(0, 8)}`;
  }

  run(now: Date): Promise<void> {
    if (!this.options.outputStore && this.options.retentionMs !== undefined && !this.#warned) {
      this.#warned = true;
      this.options.log?.(
        "warn",
        "history archive: TRIBUTARY_HISTORY_RETENTION is set, but this process has no output store to archive to " +
          "(set TRIBUTARY_OUTPUT_DIR or TRIBUTARY_S3_BUCKET); history is kept until a reconciler with one archives it",
      );
    }
    if (!this.options.outputStore || this.#working) return Promise.resolve();
    const since = now.getTime() - this.#lastRun;
    if (!this.#more && since >= 0 && since < (this.options.intervalMs ?? 60_000)) return Promise.resolve();
    this.#lastRun = now.getTime();
    this.#working = this.archive(now)
      .then((pass) => {
        if (pass.archives > 0) {
          this.options.log?.(
            "info",
            `history archive: ${pass.runs} run(s) and ${pass.events} event(s) past their retention archived ` +
              `(${pass.rows} rows, ${pass.logs} log file(s), ${pass.bytes} bytes in ${pass.archives} object(s))`,
          );
        }
      })
      .catch((error: unknown) => {
        this.#more = false;
        this.options.log?.("warn", `history archive: ${(error as Error).message ?? String(error)}; trying again at a later pass`);
      })
      .finally(() => {
        this.#working = undefined;
      });
    return Promise.resolve();
  }

  /** Until the current work ends (tests, shutdown). */
  async idle(): Promise<void> {
    await this.#working;
  }

  /** One pass: archives up to maxBatches batches of what is past retention now. */
  async archive(now: Date = new Date()): Promise<ArchivePass> {
    const outputStore = this.options.outputStore;
    const total = { archives: 0, runs: 0, events: 0, rows: 0, logs: 0, bytes: 0 };
    this.#more = false;
    if (!outputStore) return total;
    const policy = await this.#policy(now);
    if (policy.before === null && (policy.assets ?? []).length === 0) return total;
    await this.options.store.releaseAbandoned(new Date(now.getTime() - (this.options.abandonedAfterMs ?? 3_600_000)), now);
    const maxBatches = this.options.maxBatches ?? 20;
    // Events left by archived runs are looked for once the rest is done, daily: it takes a scan of the events.
    let orphans = now.getTime() - this.#orphansAt >= ORPHANS_EVERY_MS;
    const limit = this.options.batch ?? 500;
    for (let i = 0; i < maxBatches; i++) {
      let batch = await this.options.store.claim(policy, { limit, owner: this.#owner }, now);
      if (!batch && orphans) {
        batch = await this.options.store.claim(policy, { limit, owner: this.#owner, orphans: true }, now);
        if (!batch) {
          this.#orphansAt = now.getTime();
          orphans = false;
        }
      }
      if (!batch) return total;
      let sizeBytes: number;
      let logs: number;
      try {
        const runLogs = await readRunLogs(this.options.logsDir, batch.runIds);
        const body = await encodeArchive(batch.day, batch.archiveId, { rows: batch.rows, logs: runLogs });
        const ref = await outputStore.putBytes(historyArchiveKey(batch.day, batch.archiveId), body, HISTORY_ARCHIVE_CONTENT_TYPE);
        sizeBytes = body.byteLength;
        logs = runLogs.length;
        await this.options.store.written(batch.archiveId, {
          storageRef: ref,
          sizeBytes,
          logCount: logs,
          logPartitions: logPartitions(batch.rows.steps, runLogs),
        });
      } catch (error) {
        // Nothing was deleted: the rows stay, claimable again.
        await this.options.store.release(batch.archiveId, now).catch(() => undefined);
        throw error;
      }
      const done = await this.options.store.complete(batch, now);
      if (!done.archived) continue;
      await removeRunLogs(this.options.logsDir, batch.runIds);
      total.archives++;
      total.runs += batch.runIds.length;
      total.events += batch.rows.events.length;
      total.rows += done.rows;
      total.logs += logs;
      total.bytes += sizeBytes;
    }
    this.#more = true;
    return total;
  }

  async #policy(now: Date): Promise<HistoryRetentionPolicy> {
    const { retentionMs } = this.options;
    const graph = this.options.graphs ? (await this.options.graphs.current()).graph : undefined;
    const assets = (graph?.assets ?? [])
      .filter((a) => a.retention?.historyMs !== undefined)
      .map((a) => ({ assetKey: a.key, before: new Date(now.getTime() - a.retention!.historyMs!) }));
    return { before: retentionMs === undefined ? null : new Date(now.getTime() - retentionMs), assets };
  }
}
