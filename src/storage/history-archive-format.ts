import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { gunzip, gzip } from "node:zlib";
import { StorageError } from "../errors/index.js";
import { HISTORY_TABLES, type HistoryTable } from "./history-archive-store.js";

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** The content type of an archive object. */
export const HISTORY_ARCHIVE_CONTENT_TYPE = "application/gzip";
const FORMAT = "tributary-history";
const VERSION = 1;

/** Where an archive object lives in the output store. */
export function historyArchiveKey(day: string, archiveId: string): string {
  return `history/${day}/${archiveId}.jsonl.gz`;
}

/** A try's log file kept in an archive: `<logs dir>/<run>/<file>`. */
export interface ArchivedLog {
  readonly run: string;
  readonly file: string;
  readonly text: string;
}

export interface ArchiveContent {
  readonly rows: Readonly<Record<HistoryTable, readonly string[]>>;
  readonly logs: readonly ArchivedLog[];
}

/**
 * An archive as gzip JSON Lines: a header line (`{"format":"tributary-history","version":1,"day":…}`), then a line per
 * row (`{"table":"runs","row":{…}}`, the row exactly as the database gave it, parents before children) and per log
 * file (`{"log":{"run":…,"file":…,"text":…}}`).
 */
export async function encodeArchive(day: string, archiveId: string, content: ArchiveContent): Promise<Uint8Array> {
  const lines = [JSON.stringify({ format: FORMAT, version: VERSION, day, archive: archiveId })];
  for (const table of HISTORY_TABLES) for (const row of content.rows[table]) lines.push(`{"table":"${table}","row":${row}}`);
  for (const log of content.logs) lines.push(JSON.stringify({ log }));
  return gzipAsync(Buffer.from(`${lines.join("\n")}\n`, "utf8"));
}

const ROW_LINE = /^\{"table":"([a-z_]+)","row":(.*)\}$/;

/** Reads an archive written by encodeArchive; `ref` names it in errors. */
export async function decodeArchive(bytes: Uint8Array, ref: string): Promise<ArchiveContent> {
  let text: string;
  try {
    text = (await gunzipAsync(bytes)).toString("utf8");
  } catch (cause) {
    throw new StorageError("HISTORY_ARCHIVE_INVALID", `archive ${ref} is not a gzip file: ${(cause as Error).message}`, { cause });
  }
  const lines = text.split("\n").filter((l) => l !== "");
  const header = safeParse(lines[0] ?? "") as { format?: unknown; version?: unknown } | undefined;
  if (header?.format !== FORMAT || header.version !== VERSION) {
    throw new StorageError(
      "HISTORY_ARCHIVE_INVALID",
      `archive ${ref} is not a history archive of version ${VERSION} (its first line is not its header)`,
    );
  }
  const rows = Object.fromEntries(HISTORY_TABLES.map((t) => [t, [] as string[]])) as Record<HistoryTable, string[]>;
  const logs: ArchivedLog[] = [];
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const row = ROW_LINE.exec(line);
    if (row && (HISTORY_TABLES as readonly string[]).includes(row[1]!)) {
      rows[row[1] as HistoryTable].push(row[2]!);
      continue;
    }
    const log = (safeParse(line) as { log?: ArchivedLog } | undefined)?.log;
    if (!log || typeof log.run !== "string" || typeof log.file !== "string" || typeof log.text !== "string") {
      throw new StorageError("HISTORY_ARCHIVE_INVALID", `archive ${ref}: line ${i + 1} is neither a row of a history table nor a log`);
    }
    logs.push(log);
  }
  return { rows, logs };
}

function safeParse(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

const LOG_FILE = /^\d+-\d+\.log$/;

/** The try logs of some runs (`<logsDir>/<run>/<step>-<try>.log`); a run without any has none. */
export async function readRunLogs(logsDir: string, runIds: readonly string[]): Promise<ArchivedLog[]> {
  const logs: ArchivedLog[] = [];
  for (const run of runIds) {
    const dir = path.join(logsDir, run);
    for (const file of (await readdir(dir).catch(() => [] as string[])).filter((f) => LOG_FILE.test(f)).sort()) {
      const text = await readFile(path.join(dir, file), "utf8").catch(() => undefined);
      if (text !== undefined) logs.push({ run, file, text });
    }
  }
  return logs;
}

/** Deletes the log directories of archived runs. */
export async function removeRunLogs(logsDir: string, runIds: readonly string[]): Promise<void> {
  for (const run of runIds) await rm(path.join(logsDir, run), { recursive: true, force: true, maxRetries: 3 });
}

/** Writes restored logs back; a file that is there already is left as it is. */
export async function writeRunLogs(logsDir: string, logs: readonly ArchivedLog[]): Promise<void> {
  for (const log of logs) {
    // Names come from the archive: only `<uuid-like dir>/<step>-<try>.log`, nothing that leaves the logs directory.
    if (!/^[0-9a-f-]{36}$/i.test(log.run) || !LOG_FILE.test(log.file)) continue;
    const dir = path.join(logsDir, log.run);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, log.file), log.text, { flag: "wx" }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "EEXIST") throw error;
    });
  }
}
