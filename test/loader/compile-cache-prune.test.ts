import { mkdtemp, readdir, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { prune } from "../../src/loader/compile-definitions.js";

const HOUR = 3_600_000;

describe("pruning the compiled definitions cache", () => {
  const dirs: string[] = [];
  afterEach(async () => {
    await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
  });

  async function cache(): Promise<string> {
    const dir = await mkdtemp(path.join(tmpdir(), "tributary-prune-"));
    dirs.push(dir);
    return dir;
  }
  async function file(dir: string, name: string, ageMs: number): Promise<void> {
    await writeFile(path.join(dir, name), "module.exports = {};");
    const at = new Date(Date.now() - ageMs);
    await utimes(path.join(dir, name), at, at);
  }

  it("deletes files unused for a day and keeps the rest, then leaves the cache alone for an hour", async () => {
    const dir = await cache();
    await file(dir, "old.cjs", 25 * HOUR);
    await file(dir, "recent.cjs", 23 * HOUR);
    await prune(dir);
    expect((await readdir(dir)).sort()).toEqual([".pruned", "recent.cjs"]);

    // Within the hour another process's pass does nothing: a command does not stat the whole cache each time.
    await file(dir, "old-again.cjs", 30 * HOUR);
    await prune(dir);
    expect((await readdir(dir)).sort()).toEqual([".pruned", "old-again.cjs", "recent.cjs"]);

    // An hour after the last pass, the next one prunes again.
    const lastPass = new Date(Date.now() - HOUR - 1_000);
    await utimes(path.join(dir, ".pruned"), lastPass, lastPass);
    await prune(dir);
    expect((await readdir(dir)).sort()).toEqual([".pruned", "recent.cjs"]);
  });

  it("goes on without pruning when the cache directory cannot be read", async () => {
    const dir = await cache();
    await expect(prune(path.join(dir, "missing"))).resolves.toBeUndefined();
  });
});
