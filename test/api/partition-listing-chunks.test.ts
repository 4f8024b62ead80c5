// A large partition page is listed and handed to GraphQL in chunks, a turn of the event loop apart, so other
// requests (health checks) are answered while it is worked on. Checked by what a callback scheduled on every turn
// sees, not by time.
import { describe, expect, it } from "vitest";
import { LISTING_CHUNK, listPartitions, releasedInChunks } from "../../src/api/partition-listing.js";
import type { SnapshotAsset } from "../../src/graph/index.js";
import { hourly } from "../../src/partitions/index.js";

/** Calls `progress` on every turn of the event loop until `done` settles; returns what it saw, in order. */
async function onEveryTurn<T>(done: Promise<T>, progress: () => number): Promise<{ value: T; seen: number[] }> {
  const seen: number[] = [];
  let settled = false;
  const probe = () => {
    seen.push(progress());
    if (!settled) setImmediate(probe);
  };
  setImmediate(probe);
  const value = await done;
  settled = true;
  return { value, seen };
}

describe("partition pages in chunks", () => {
  it("releases the rows of a page at most LISTING_CHUNK per turn, after what they wait for", async () => {
    const rows = Array.from({ length: 10_000 }, (_, i) => i);
    // The largest page takes ten turns at least.
    expect(LISTING_CHUNK).toBeLessThanOrEqual(1_000);
    let ready = false;
    let released = 0;
    let releasedEarly = 0;
    const statuses = new Promise<void>((resolve) => setImmediate(() => ((ready = true), resolve())));
    const all = Promise.all(
      releasedInChunks(rows, statuses).map((p) =>
        p.then((row) => {
          released++;
          if (!ready) releasedEarly++;
          return row;
        }),
      ),
    );
    const { value, seen } = await onEveryTurn(all, () => released);
    expect(value).toEqual(rows);
    expect(releasedEarly).toBe(0);
    const steps = seen.slice(1).map((n, i) => n - seen[i]!);
    expect(Math.max(...steps)).toBeLessThanOrEqual(LISTING_CHUNK);
    expect(seen.filter((n) => n > 0 && n < rows.length).length).toBeGreaterThanOrEqual(rows.length / LISTING_CHUNK - 1);
  });

  it("releases the rows even when what they wait for fails (each row reads its own error)", async () => {
    const failed = Promise.reject(new Error("database gone"));
    expect(await Promise.all(releasedInChunks([1, 2, 3], failed))).toEqual([1, 2, 3]);
  });

  it("lists a 10 000-partition page over many turns", async () => {
    const asset = {
      key: "big",
      codeVersion: null,
      partitions: hourly({ start: "2015-08-01", timezone: "UTC" }),
    } as unknown as SnapshotAsset;
    const { value, seen } = await onEveryTurn(
      listPartitions(asset, { first: 10_000, now: new Date("2026-12-01T00:00:00Z"), dynamicKeys: async () => [] }),
      () => 0,
    );
    expect(value.nodes).toHaveLength(10_000);
    expect(value.nodes[9_999]!.key).toBe("2016-09-20-15:00");
    expect(seen.length).toBeGreaterThanOrEqual(10);
  });
});
