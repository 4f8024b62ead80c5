// LISTEN/NOTIFY behaviour both dialects share.
import { describe, expect, it } from "vitest";
import { notifyIn, type DatabaseHandle } from "../../src/storage/index.js";

export async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export function notifyContract(name: string, handle: () => DatabaseHandle): void {
  describe(`listen/notify: ${name}`, () => {
    it("delivers notifications to every handler until it unlistens", async () => {
      const a: string[] = [];
      const b: string[] = [];
      const unlistenA = await handle().listen("tributary_test", (p) => a.push(p));
      const unlistenB = await handle().listen("tributary_test", (p) => b.push(p));
      await handle().notify("tributary_test", "one");
      await waitFor(() => a.length === 1 && b.length === 1, "both handlers");
      await unlistenA();
      await handle().notify("tributary_test", "two");
      await waitFor(() => b.length === 2, "the remaining handler");
      await unlistenB();
      expect(a).toEqual(["one"]);
      expect(b).toEqual(["one", "two"]);
    });

    it("delivers a notification sent in a transaction only when it commits", async () => {
      const got: string[] = [];
      const unlisten = await handle().listen("tributary_tx", (p) => got.push(p));
      try {
        await handle()
          .db.transaction()
          .execute(async (trx) => {
            await notifyIn(trx, "tributary_tx", "rolled-back");
            throw new Error("undo");
          })
          .catch(() => undefined);
        await handle()
          .db.transaction()
          .execute(async (trx) => {
            await notifyIn(trx, "tributary_tx", "committed");
            expect(got).toEqual([]); // not before commit
          });
        await handle().notify("tributary_tx", "marker");
        await waitFor(() => got.includes("marker"), "the marker");
        expect(got).toEqual(["committed", "marker"]);
      } finally {
        await unlisten();
      }
    });

    it("rejects channel names that LISTEN and pg_notify would read differently", async () => {
      await expect(handle().listen("Mixed-Case", () => undefined)).rejects.toMatchObject({ code: "INVALID_CHANNEL" });
      await expect(handle().notify("has space", "x")).rejects.toMatchObject({ code: "INVALID_CHANNEL" });
    });
  });
}
