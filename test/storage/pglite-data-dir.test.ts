import { spawn, type ChildProcess } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { advertiseDataDirServer, liveLockHolder, LOCK_FILE_NAME, lockDataDir, readLockHolder } from "../../src/storage/index.js";
import { makeTempDir, openTestPglite } from "../support/pglite.js";

const childScript = fileURLToPath(new URL("./fixtures/data-dir-child.ts", import.meta.url));

function startChild(mode: "hold" | "open", dir: string): { child: ChildProcess; firstLine: Promise<string> } {
  const child = spawn(process.execPath, ["--import", "tsx", childScript, mode, dir], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const firstLine = new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const newline = out.indexOf("\n");
      if (newline >= 0) resolve(out.slice(0, newline));
    });
    child.on("exit", (code) => reject(new Error(`child exited (${code}) before answering: ${out}`)));
  });
  return { child, firstLine };
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once("exit", () => resolve());
  });
}

describe("PGlite data directory", () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  async function tempDir(): Promise<string> {
    const dir = await makeTempDir("tributary-pglite-");
    cleanups.push(dir.remove);
    return dir.path;
  }

  it("persists across close and reopen, and refuses a second opener in the same process", async () => {
    const dir = await tempDir();
    const first = await openTestPglite({ dataDir: dir });
    try {
      await first.db
        .insertInto("cursors")
        .values({ name: "kept", value: sql`'42'::jsonb` })
        .execute();
      const second = openTestPglite({ dataDir: dir });
      await expect(second).rejects.toMatchObject({ name: "StorageError", code: "DATA_DIR_LOCKED" });
      const message = (await second.catch((error: Error) => error)) as Error;
      expect(message.message).toContain(dir);
      expect(message.message).toContain(`process ${process.pid}`);
    } finally {
      await first.close();
    }
    expect(readLockHolder(dir)).toBeUndefined();

    const reopened = await openTestPglite({ dataDir: dir });
    try {
      const row = await reopened.db.selectFrom("cursors").select("value").where("name", "=", "kept").executeTakeFirst();
      expect(row?.value).toBe(42);
    } finally {
      await reopened.close();
    }
  });

  it("refuses an opener in another process while this one holds the directory", async () => {
    const dir = await tempDir();
    const handle = await openTestPglite({ dataDir: dir });
    try {
      const { child, firstLine } = startChild("open", dir);
      const answer = JSON.parse(await firstLine) as { ok: boolean; code?: string; message?: string };
      await exited(child);
      expect(answer).toMatchObject({ ok: false, code: "DATA_DIR_LOCKED" });
      expect(answer.message).toContain(`process ${process.pid}`);
    } finally {
      await handle.close();
    }
  });

  it("refuses while another live process holds the lock, and takes over once it died", async () => {
    const dir = await tempDir();
    const { child, firstLine } = startChild("hold", dir);
    cleanups.push(async () => {
      child.kill("SIGKILL");
      await exited(child);
    });
    expect(await firstLine).toBe("locked");
    const childPid = child.pid!;
    await expect(openTestPglite({ dataDir: dir })).rejects.toMatchObject({
      code: "DATA_DIR_LOCKED",
      message: expect.stringContaining(`process ${childPid}`),
    });

    child.kill("SIGKILL");
    await exited(child);
    expect(readLockHolder(dir)?.pid).toBe(childPid); // stale: its holder is dead
    expect(liveLockHolder(dir)).toBeUndefined();

    const handle = await openTestPglite({ dataDir: dir });
    try {
      expect(readLockHolder(dir)?.pid).toBe(process.pid);
    } finally {
      await handle.close();
    }
  });

  it("records the URL its holder serves the API at, names it when refusing, and keeps it to the holder", async () => {
    const dir = await tempDir();
    expect(() => advertiseDataDirServer(dir, "http://127.0.0.1:4000")).toThrow(/does not hold the data directory/);
    const lock = lockDataDir(dir);
    try {
      expect(readLockHolder(dir)?.url).toBeUndefined();
      advertiseDataDirServer(dir, "http://127.0.0.1:4000");
      expect(readLockHolder(dir)).toMatchObject({ pid: process.pid, url: "http://127.0.0.1:4000" });
      expect(liveLockHolder(dir)?.url).toBe("http://127.0.0.1:4000");
      expect(() => lockDataDir(dir)).toThrow(
        `in use by process ${process.pid} on ${hostname()} (this process), which serves the API at http://127.0.0.1:4000`,
      );
    } finally {
      lock.release();
    }
    expect(readLockHolder(dir)).toBeUndefined();
    expect(liveLockHolder(dir)).toBeUndefined();
  });

  it("takes over unreadable lock files but respects holders on other hosts", async () => {
    const dir = await tempDir();
    const lockFile = join(dir, LOCK_FILE_NAME);
    await writeFile(lockFile, "garbage");
    lockDataDir(dir).release();

    await writeFile(lockFile, JSON.stringify({ pid: process.pid, hostname: `not-${hostname()}`, token: "t" }));
    expect(() => lockDataDir(dir)).toThrow(/in use by process \d+ on not-/);
    expect(JSON.parse(await readFile(lockFile, "utf8"))).toMatchObject({ token: "t" });
  });

  it("opens with the buffer pool a command asks for, and refuses a size it cannot read before touching the directory", async () => {
    const dir = await tempDir();
    const small = await openTestPglite({ dataDir: dir, sharedBuffers: "8MB" });
    try {
      const { rows } = await sql<{ shared_buffers: string }>`show shared_buffers`.execute(small.db);
      expect(rows[0]?.shared_buffers).toBe("8MB");
    } finally {
      await small.close();
    }
    const reopened = await openTestPglite({ dataDir: dir, migrated: false, sharedBuffers: null });
    try {
      const { rows } = await sql<{ shared_buffers: string }>`show shared_buffers`.execute(reopened.db);
      expect(rows[0]?.shared_buffers).toBe("128MB");
    } finally {
      await reopened.close();
    }
    await expect(openTestPglite({ dataDir: dir, migrated: false, sharedBuffers: "lots" })).rejects.toThrow(
      /sharedBuffers: "lots" is not a size; write e\.g\. 16MB/,
    );
    // Refused before the lock was taken: the directory opens again at once.
    expect(readLockHolder(dir)).toBeUndefined();
  });
});
