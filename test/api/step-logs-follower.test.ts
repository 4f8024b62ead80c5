import { appendFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { followLog, type TryEnd } from "../../src/api/logs/log-follower.js";
import { tryLogFile } from "../../src/api/logs/log-file.js";

// The follower on real files: lines as they are appended, byte offsets, partial lines, aborts.
const END: TryEnd = { tryNumber: 1, state: "success", endedAt: null, error: null };

describe("followLog", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "tributary-follow-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  function follow(file: string, options: { from?: number; ended: () => boolean; signal?: AbortSignal }) {
    const lines: { line: string; next: number }[] = [];
    const done = followLog(file, {
      from: options.from ?? 0,
      signal: options.signal ?? new AbortController().signal,
      pollMs: 10,
      statePollMs: 10,
      ended: async () => (options.ended() ? END : undefined),
      onLine: async (line, next) => void lines.push({ line, next }),
    });
    return { lines, done };
  }

  it("holds a partial line until its newline is written; flushes it once the try has ended", async () => {
    const file = path.join(dir, "partial.log");
    let ended = false;
    const { lines, done } = follow(file, { ended: () => ended });
    await writeFile(file, "first\nsec");
    await expect.poll(() => lines.length).toBe(1);
    await new Promise((r) => setTimeout(r, 50));
    expect(lines.map((l) => l.line)).toEqual(["first"]);
    await appendFile(file, "ond\r\nlast without newline");
    await expect.poll(() => lines.length).toBe(2);
    ended = true;
    expect(await done).toEqual(END);
    expect(lines.map((l) => l.line)).toEqual(["first", "second", "last without newline"]);
    expect(lines.at(-1)!.next).toBe(Buffer.byteLength("first\nsecond\r\nlast without newline"));
  });

  it("counts offsets in bytes, so resuming from a line's offset sends exactly the lines after it", async () => {
    const file = path.join(dir, "utf8.log");
    await writeFile(file, "café ☕\nnaïve\nΩ end\n");
    const all = follow(file, { ended: () => true });
    await all.done;
    expect(all.lines.map((l) => l.line)).toEqual(["café ☕", "naïve", "Ω end"]);
    const rest = follow(file, { from: all.lines[0]!.next, ended: () => true });
    await rest.done;
    expect(rest.lines.map((l) => l.line)).toEqual(["naïve", "Ω end"]);
  });

  it("sends a backlog larger than one read in order, and a missing file as no lines", async () => {
    const file = path.join(dir, "big.log");
    const big = Array.from({ length: 20_000 }, (_, i) => `line ${i} ${"x".repeat(20)}`);
    await writeFile(file, big.join("\n") + "\n");
    const all = follow(file, { ended: () => true });
    await all.done;
    expect(all.lines.map((l) => l.line)).toEqual(big);
    const missing = follow(path.join(dir, "nothing.log"), { ended: () => true });
    expect(await missing.done).toEqual(END);
    expect(missing.lines).toEqual([]);
  });

  it("follows a 5 MB log written over time: every line arrives once, in order, and nothing is read twice", async () => {
    const file = path.join(dir, "five-mb.log");
    const lines = Array.from({ length: 52_000 }, (_, i) => `${String(i).padStart(6, "0")} ${"é".repeat(10)}${"x".repeat(72)}`);
    const text = lines.join("\n") + "\n";
    expect(Buffer.byteLength(text)).toBeGreaterThan(5_000_000);
    let ended = false;
    const { lines: got, done } = follow(file, { ended: () => ended });
    // The writer appends in uneven pieces that cut lines (and multi-byte characters) anywhere, over about a second.
    const bytes = Buffer.from(text);
    for (let at = 0, n = 0; at < bytes.length; n++) {
      const size = 1 + ((n * 7_919) % 180_000);
      await appendFile(file, bytes.subarray(at, at + size));
      at += size;
      if (n % 4 === 0) await new Promise((r) => setTimeout(r, 15));
    }
    await expect.poll(() => got.length, { timeout: 20_000 }).toBe(lines.length);
    ended = true;
    expect(await done).toEqual(END);
    expect(got.length).toBe(lines.length);
    expect(got.every((l, i) => l.line === lines[i])).toBe(true);
    expect(got.at(-1)!.next).toBe(bytes.length);
  });

  it("reads the state at once when woken, and only on its poll otherwise", async () => {
    const file = path.join(dir, "woken.log");
    await writeFile(file, "one\n");
    let wake: (() => void) | undefined;
    let unsubscribed = false;
    let reads = 0;
    let ended = false;
    const done = followLog(file, {
      from: 0,
      signal: new AbortController().signal,
      pollMs: 20,
      statePollMs: 60_000,
      subscribe: async (handler) => {
        wake = handler;
        return async () => void (unsubscribed = true);
      },
      ended: async () => (reads++, ended ? END : undefined),
      onLine: async () => undefined,
    });
    await new Promise((r) => setTimeout(r, 200));
    expect(reads).toBe(1);
    ended = true;
    const woken = Date.now();
    wake!();
    expect(await done).toEqual(END);
    expect(Date.now() - woken).toBeLessThan(1_000);
    expect(reads).toBe(2);
    expect(unsubscribed).toBe(true);
  });

  it("returns undefined at once when aborted while waiting", async () => {
    const controller = new AbortController();
    const { done } = follow(path.join(dir, "never.log"), { ended: () => false, signal: controller.signal });
    await new Promise((r) => setTimeout(r, 30));
    controller.abort();
    expect(await done).toBeUndefined();
  });
});

describe("tryLogFile", () => {
  it("uses the stored reference, else the executors' layout, and refuses anything outside the logs directory", () => {
    const step = { runId: "r1", id: 7 };
    expect(tryLogFile("/logs", step, { tryNumber: 2, logRef: null })).toBe("/logs/r1/7-2.log");
    expect(tryLogFile("/logs", step, { tryNumber: 2, logRef: "/logs/r1/other.log" })).toBe("/logs/r1/other.log");
    for (const outside of ["/logs/../etc/passwd", "/logsx/a.log", "/logs"]) {
      expect(tryLogFile("/logs", step, { tryNumber: 1, logRef: outside })).toBeUndefined();
    }
  });
});
