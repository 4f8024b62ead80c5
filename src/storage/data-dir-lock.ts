import { randomUUID } from "node:crypto";
import { linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { StorageError } from "../errors/index.js";

export const LOCK_FILE_NAME = "tributary.lock";

/** Contents of the lock file. */
export interface LockHolder {
  pid: number;
  hostname: string;
  token: string;
  acquiredAt: string;
  /** Where the holder serves the API, once it listens: other processes ask it instead of opening the directory. */
  url?: string;
}

export interface DataDirLock {
  readonly dataDir: string;
  readonly lockFile: string;
  /** Removes the lock file if it is still ours; idempotent. */
  release(): void;
  /** Records in the lock file the URL this process serves the API at. */
  advertise(url: string): void;
}

const held = new Set<DataDirLock>();
let exitHookInstalled = false;

/**
 * Takes the lock file `<dataDir>/tributary.lock`, which holds the owner's pid.
 * PGlite does not stop a second process from opening the same data directory
 * (the second one's writes are silently lost), so every opener must hold this.
 * A lock whose pid is dead on this host is stale and taken over.
 *
 * @throws StorageError DATA_DIR_LOCKED naming the directory and the holding pid.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const dir = resolve(dataDir);
  const lockFile = join(dir, LOCK_FILE_NAME);
  mkdirSync(dir, { recursive: true });
  const me: LockHolder = { pid: process.pid, hostname: hostname(), token: randomUUID(), acquiredAt: new Date().toISOString() };
  const text = JSON.stringify(me);

  for (let attempt = 0; attempt < 5; attempt++) {
    if (tryCreate(lockFile, text, me.token)) return track(dir, lockFile, me.token);
    const current = readText(lockFile);
    if (current === undefined) continue; // released meanwhile: try again
    const holder = parseHolder(current);
    if (holder && !isStale(holder)) throw lockedError(dir, lockFile, holder);
    // Stale (dead pid, or unreadable leftovers): remove it only if nobody replaced it meanwhile.
    if (readText(lockFile) === current) removeQuietly(lockFile);
  }
  const holder = parseHolder(readText(lockFile) ?? "");
  throw lockedError(dir, lockFile, holder);
}

/** The current holder of a data directory's lock, if any (for diagnostics). */
export function readLockHolder(dataDir: string): LockHolder | undefined {
  return parseHolder(readText(join(resolve(dataDir), LOCK_FILE_NAME)) ?? "");
}

/** The holder of a data directory's lock while it is alive (a dead holder's lock is taken over by the next opener). */
export function liveLockHolder(dataDir: string): LockHolder | undefined {
  const holder = readLockHolder(dataDir);
  return holder && !isStale(holder) ? holder : undefined;
}

/**
 * Records in the lock file of `dataDir`, held by this process, the URL it
 * serves the API at, so a command that finds the directory locked can ask this
 * process instead.
 *
 * @throws StorageError DATA_DIR_LOCK_FAILED when this process does not hold that directory.
 */
export function advertiseDataDirServer(dataDir: string, url: string): void {
  const dir = resolve(dataDir);
  const lock = [...held].find((l) => l.dataDir === dir);
  if (!lock) throw new StorageError("DATA_DIR_LOCK_FAILED", `this process does not hold the data directory ${dir}`);
  lock.advertise(url);
}

/** Creates the lock atomically with its full contents: write a private file, then hard-link it into place. */
function tryCreate(lockFile: string, text: string, token: string): boolean {
  const temp = `${lockFile}.${token}`;
  writeFileSync(temp, text);
  try {
    linkSync(temp, lockFile);
    return true;
  } catch (error) {
    if (isErrno(error, "EEXIST")) return false;
    throw new StorageError("DATA_DIR_LOCK_FAILED", `cannot create lock file ${lockFile}: ${String(error)}`, {
      cause: error,
    });
  } finally {
    removeQuietly(temp);
  }
}

function track(dataDir: string, lockFile: string, token: string): DataDirLock {
  const lock: DataDirLock = {
    dataDir,
    lockFile,
    release() {
      if (!held.delete(lock)) return;
      const current = parseHolder(readText(lockFile) ?? "");
      if (current?.token === token) removeQuietly(lockFile);
    },
    advertise(url) {
      const current = parseHolder(readText(lockFile) ?? "");
      if (current?.token !== token) {
        throw new StorageError("DATA_DIR_LOCK_FAILED", `the lock file ${lockFile} is no longer this process's`);
      }
      // A whole new file renamed into place: a reader sees the old contents or the new, never half of them.
      const temp = `${lockFile}.${token}`;
      writeFileSync(temp, JSON.stringify({ ...current, url }));
      renameSync(temp, lockFile);
    },
  };
  held.add(lock);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", () => {
      for (const l of [...held]) l.release();
    });
  }
  return lock;
}

function isStale(holder: LockHolder): boolean {
  // A pid on another host cannot be checked: assume it is alive.
  if (holder.hostname !== hostname()) return false;
  return !isProcessAlive(holder.pid);
}

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return isErrno(error, "EPERM");
  }
}

function lockedError(dataDir: string, lockFile: string, holder: LockHolder | undefined): StorageError {
  const who = holder
    ? `process ${holder.pid} on ${holder.hostname}${holder.pid === process.pid && holder.hostname === hostname() ? " (this process)" : ""}` +
      (holder.url ? `, which serves the API at ${holder.url}` : "")
    : "another process";
  return new StorageError(
    "DATA_DIR_LOCKED",
    `data directory ${dataDir} is in use by ${who}. PGlite allows one process at a time: stop that process ` +
      `or talk to it through its API (--url). If no such process is running, delete ${lockFile}.`,
    { location: { file: dataDir } },
  );
}

function parseHolder(text: string): LockHolder | undefined {
  try {
    const value: unknown = JSON.parse(text);
    // A bare pid (written by hand or an older version) is a holder on this host.
    if (typeof value === "number") return parseHolder(JSON.stringify({ pid: value }));
    if (typeof value !== "object" || value === null) return undefined;
    const { pid, hostname: host, token, acquiredAt, url } = value as Record<string, unknown>;
    if (typeof pid !== "number" || !Number.isInteger(pid) || pid <= 0) return undefined;
    return {
      pid,
      hostname: typeof host === "string" ? host : hostname(),
      token: typeof token === "string" ? token : "",
      acquiredAt: typeof acquiredAt === "string" ? acquiredAt : "",
      ...(typeof url === "string" && url !== "" ? { url } : {}),
    };
  } catch {
    return undefined;
  }
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    if (isErrno(error, "ENOENT")) return undefined;
    throw error;
  }
}

function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}

function isErrno(error: unknown, code: string): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === code;
}
