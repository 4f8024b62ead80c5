import { localGuard, type Guard } from "../../access/index.js";
import { InputError, StorageError } from "../../errors/index.js";
import { parseDuration } from "../../sdk/index.js";
import {
  decodeArchive,
  writeRunLogs,
  type HistoryArchiveDay,
  type HistoryArchiveStore,
  type OutputStore,
  type RestoredHistory,
} from "../../storage/index.js";

/** How long a restored day is held back from archival unless the request says (7 days). */
export const DEFAULT_RESTORE_HOLD_MS = 7 * 86_400_000;
const MIN_HOLD_MS = 3_600_000;
const MAX_HOLD_MS = 3650 * 86_400_000;

export interface HistoryServices {
  readonly archives: HistoryArchiveStore;
  /** Where the archives are; null: this process has none configured. */
  readonly outputStore: OutputStore | null;
  /** Where restored try logs go back to. */
  readonly logsDir: string | null;
}

export interface RestoreHistoryInput {
  /** YYYY-MM-DD (UTC), as `archive list` shows it. */
  readonly day: string;
  /** How long the day stays out of archival (e.g. "7d", 1h to 3650d); default 7 days. */
  readonly hold?: string | null | undefined;
}

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** The days with archived history, newest first. Needs `viewer` on the instance (it names no asset). */
export async function historyArchiveDays(services: HistoryServices): Promise<HistoryArchiveDay[]> {
  return services.archives.days();
}

/**
 * Brings a day's archived history back into the database: reads every archive object of the day, puts their rows
 * back (runs, steps, tries, waits, events, lineage rows, check results) and their logs into the logs directory, marks
 * the archives restored (their objects are deleted: the rows live here again) and holds the day out of archival for
 * `hold`, then it is archived again. Needs `admin` on the instance.
 *
 * Errors (nothing restored): InputError HISTORY_DAY_INVALID, HISTORY_HOLD_INVALID, HISTORY_DAY_NOT_ARCHIVED;
 * StorageError HISTORY_ARCHIVE_NO_STORE (no output store here), an output store error (the object could not be read),
 * HISTORY_ARCHIVE_INVALID (not an archive), HISTORY_ARCHIVE_CHANGED (another restore took it meanwhile).
 */
export async function restoreHistory(
  services: HistoryServices,
  input: RestoreHistoryInput,
  now: Date,
  guard: Guard = localGuard(),
): Promise<RestoredHistory> {
  const day = validDay(input.day);
  const holdMs = holdOf(input.hold);
  const audit = await guard.authorize("restoreHistory", "admin", { assets: null, detail: { day, holdMs } });
  const archives = await services.archives.archivesOf(day);
  if (archives.length === 0) {
    const known = (await services.archives.days()).find((d) => d.day === day);
    throw new InputError(
      known?.lastRestoredAt
        ? `the history of ${day} is not archived: it was restored on ${known.lastRestoredAt.toISOString()} and is in the database`
        : `no history of ${day} is archived; \`tributary archive list\` shows the days that are`,
      { code: "HISTORY_DAY_NOT_ARCHIVED", location: { field: "day" } },
    );
  }
  const store = services.outputStore;
  if (!store) {
    throw new StorageError(
      "HISTORY_ARCHIVE_NO_STORE",
      `the history of ${day} is archived in an output store, and this process has none configured ` +
        `(set TRIBUTARY_OUTPUT_DIR or TRIBUTARY_S3_BUCKET as the reconcilers that archived it do)`,
    );
  }
  const logsDir = services.logsDir;
  return services.archives.restore(
    day,
    // Under the archives' row locks: an erasure request removing logs from one of them waits until this is done.
    async (locked) => {
      // Everything read before anything is written: an object that cannot be read leaves the database as it was.
      const contents = [];
      for (const a of locked) contents.push(await decodeArchive(await store.getBytes(a.storageRef), a.storageRef));
      // Logs before the rows: if the restore then fails, a log file back without its run is harmless.
      if (logsDir)
        await writeRunLogs(
          logsDir,
          contents.flatMap((c) => c.logs),
        );
      return contents;
    },
    { until: new Date(now.getTime() + holdMs), by: guard.caller.name },
    now,
    audit,
  );
}

function validDay(day: string): string {
  const m = DAY.exec(day.trim());
  const date = m ? new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) : undefined;
  if (!m || !date || date.toISOString().slice(0, 10) !== m[0]) {
    throw new InputError(`"${day}" is not a day; write it as YYYY-MM-DD (UTC), e.g. 2026-03-14, as \`tributary archive list\` shows it`, {
      code: "HISTORY_DAY_INVALID",
      location: { field: "day" },
    });
  }
  return m[0];
}

function holdOf(hold: string | null | undefined): number {
  if (hold === undefined || hold === null || hold.trim() === "") return DEFAULT_RESTORE_HOLD_MS;
  let ms: number | undefined;
  try {
    ms = parseDuration(hold.trim(), "hold");
  } catch {
    ms = undefined;
  }
  if (ms === undefined || ms < MIN_HOLD_MS || ms > MAX_HOLD_MS) {
    throw new InputError(`hold "${hold}" must be a duration between 1h and 3650d, e.g. 7d`, {
      code: "HISTORY_HOLD_INVALID",
      location: { field: "hold" },
    });
  }
  return ms;
}
