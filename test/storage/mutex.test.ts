import { describe, expect, it } from "vitest";
import { Mutex } from "../../src/storage/mutex.js";

describe("Mutex", () => {
  it("hands the lock over in arrival order", async () => {
    const mutex = new Mutex();
    const order: number[] = [];
    const first = await mutex.acquire();
    const waiting = [1, 2, 3].map(async (n) => {
      const release = await mutex.acquire();
      order.push(n);
      release();
    });
    expect(mutex.locked).toBe(true);
    first();
    first(); // a second release must not free someone else's hold
    await Promise.all(waiting);
    expect(order).toEqual([1, 2, 3]);
    expect(mutex.locked).toBe(false);
  });

  it("gives up after the timeout without disturbing the queue", async () => {
    const mutex = new Mutex();
    const held = await mutex.acquire();
    await expect(mutex.acquire({ timeoutMs: 20, onTimeout: () => new Error("too slow") })).rejects.toThrow("too slow");
    const next = mutex.acquire();
    held();
    (await next)();
    expect(mutex.locked).toBe(false);
  });
});
