import { readdir, rmdir, stat, unlink } from "node:fs/promises";
import path from "node:path";
import type { GraphCache, LogRetentionStore, TryLogKey } from "../../storage/index.js";
import type { ReconcilerTask } from "../reconciler.js";

export interface LogRetentionTaskOptions {
  readonly store: LogRetentionStore;
  /** Where try logs are written (`<logsDir>/<run>/<step>-<try>.log`). */
  readonly logsDir: string;
  /** Logs of tries that ended longer ago are deleted; undefined: only those of assets with `retention.logs`. */
  readonly retentionMs: number | undefined;
  /** The current definitions, for the assets' own retention. */
  readonly graphs?: Pick<GraphCache, "current">;
  /** At most this often (default 10 min). */
  readonly intervalMs?: number;
  /** Run directories looked at per pass (default 1 000): a large directory is gone through over several passes. */
  readonly runsPerPass?: number;
  readonly log?: (level: "info" | "warn" | "error", message: string) => void;
}

const RUN_DIR = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const LOG_FILE = /^(\d+)-(\d+)\.log$/;
/** Tries asked about per statement. */
const BATCH = 1_000;

interface Candidate extends TryLogKey {
  readonly file: string;
  readonly size: number;
}

/**
 * Log retention (TRIBUTARY_LOG_RETENTION, and per asset `retention.logs`): deletes the log files of tries that
 * ended longer ago than their asset's retention (else the default), a slice of the logs directory per pass, and the
 * run directories left empty. A try that has not ended keeps its log, however old. Any number of reconcilers may run
 * it on the same directory: a file another one deleted first is simply gone.
 */
export class LogRetentionTask implements ReconcilerTask {
  readonly name = "log-retention";
  #lastRun = Number.NEGATIVE_INFINITY;
  /** The last run directory looked at: the next pass goes on after it (and starts over past the end). */
  #position = "";

  constructor(private readonly options: LogRetentionTaskOptions) {}

  async run(now: Date): Promise<void> {
    const since = now.getTime() - this.#lastRun;
    if (since >= 0 && since < (this.options.intervalMs ?? 600_000)) return;
    this.#lastRun = now.getTime();
    const outcome = await this.sweep(now);
    if (outcome.deleted > 0) {
      this.options.log?.(
        "info",
        `log retention: deleted ${outcome.deleted} log file(s) (${outcome.bytes} bytes) of tries past their retention`,
      );
    }
  }

  /** One pass: answers how many files (and bytes) it deleted. */
  async sweep(now: Date): Promise<{ deleted: number; bytes: number }> {
    const { retentionMs } = this.options;
    const byDefault = retentionMs === undefined ? null : now.getTime() - retentionMs;
    const graph = this.options.graphs ? (await this.options.graphs.current()).graph : undefined;
    const perAsset = new Map<string, number>();
    for (const a of graph?.assets ?? []) if (a.retention?.logsMs !== undefined) perAsset.set(a.key, now.getTime() - a.retention.logsMs);
    if (byDefault === null && perAsset.size === 0) return { deleted: 0, bytes: 0 };
    // A log written after the latest cut-off belongs to a try that ended after it: never past any retention.
    const latest = Math.max(byDefault ?? 0, ...perAsset.values());

    const runs = await this.#slice();
    const candidates: Candidate[] = [];
    for (const runId of runs) {
      const dir = path.join(this.options.logsDir, runId);
      for (const name of await readdir(dir).catch(() => [] as string[])) {
        const m = LOG_FILE.exec(name);
        if (!m) continue;
        const file = path.join(dir, name);
        const info = await stat(file).catch(() => undefined);
        if (info && info.mtimeMs < latest) candidates.push({ runId, stepId: Number(m[1]), tryNumber: Number(m[2]), file, size: info.size });
      }
    }
    let deleted = 0;
    let bytes = 0;
    for (let i = 0; i < candidates.length; i += BATCH) {
      const batch = candidates.slice(i, i + BATCH);
      const ended = new Map((await this.options.store.endedTries(batch)).map((t) => [`${t.runId}/${t.stepId}-${t.tryNumber}`, t]));
      for (const c of batch) {
        const t = ended.get(`${c.runId}/${c.stepId}-${c.tryNumber}`);
        const cutoff = t ? (perAsset.get(t.assetKey) ?? byDefault) : null;
        if (!t || cutoff === null || t.endedAt.getTime() >= cutoff) continue;
        try {
          await unlink(c.file);
          deleted++;
          bytes += c.size;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
        }
      }
    }
    // Run directories left empty go too (rmdir refuses one that is not).
    for (const runId of runs) await rmdir(path.join(this.options.logsDir, runId)).catch(() => undefined);
    return { deleted, bytes };
  }

  /** The next run directories, in name order, after the last pass's. */
  async #slice(): Promise<string[]> {
    const all = (await readdir(this.options.logsDir).catch(() => [] as string[])).filter((n) => RUN_DIR.test(n)).sort();
    const limit = this.options.runsPerPass ?? 1_000;
    let next = all.filter((n) => n > this.#position).slice(0, limit);
    if (next.length < limit && this.#position !== "")
      next = [...next, ...all.filter((n) => n <= this.#position).slice(0, limit - next.length)];
    this.#position = next.at(-1) ?? "";
    return next;
  }
}
