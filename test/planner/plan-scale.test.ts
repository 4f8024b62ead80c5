import { describe, expect, it } from "vitest";
import { asset, daily, dep, timeWindow, weekly, type AssetDefinition } from "../../src/index.js";
import { planRun } from "../../src/planner/index.js";
import { days, expectWellFormed, graphOf, noop, nothing } from "./helpers.js";

// 25 daily assets: a0…a4 roots; each later ai reads a(i-1) on the same day
// and a(i-5) over a trailing week. A weekly rollup of the last one sits
// outside the selection.
const d = daily({ start: "2024-01-01" });
const defs: AssetDefinition[] = [];
for (let i = 0; i < 25; i++) {
  const deps =
    i < 5
      ? undefined
      : {
          prev: dep(`scale/a${String(i - 1).padStart(2, "0")}`),
          week: dep(`scale/a${String(i - 5).padStart(2, "0")}`, timeWindow({ startOffset: -6 })),
        };
  defs.push(asset({ key: `scale/a${String(i).padStart(2, "0")}`, partitions: d, ...(deps ? { deps } : {}) }, noop));
}
defs.push(
  asset({ key: "scale/rollup", partitions: weekly({ start: "2024-01-01" }), deps: { last: dep("scale/a24", timeWindow()) } }, noop),
);
const graph = graphOf(...defs);
const keys = defs.slice(0, 25).map((x) => x.key);

describe("planRun at scale", () => {
  it("plans 365 daily partitions of 25 assets: 9 125 steps, edges through the mappings", () => {
    const plan = planRun({
      graph,
      version: 1,
      assets: keys,
      partitions: { kind: "range", from: "2025-01-01", to: "2025-12-31" },
      now: new Date("2026-02-01T00:00:00Z"),
      materialized: nothing,
      includeUpstream: false,
    });
    expect(plan.steps).toHaveLength(9125);
    expectWellFormed(plan);
    const dayKeys = days("2025-01-01", "2025-12-31");
    // Asset i's steps are 365·i … 365·i + 364, oldest first.
    for (const i of [0, 7, 24]) {
      expect(plan.steps[365 * i]!.assetKey).toBe(keys[i]);
      expect(plan.steps.slice(365 * i, 365 * i + 365).map((s) => s.partitionKey)).toEqual(dayKeys);
    }
    // Edges, checked against the definition of the graph for a sample of steps.
    for (const [i, day] of [
      [5, 0],
      [12, 3],
      [24, 200],
      [24, 364],
      [6, 6],
    ] as const) {
      const expected: number[] = [365 * (i - 5) + Math.max(0, day - 6)];
      for (let k = expected[0]! + 1; k <= 365 * (i - 5) + day; k++) expected.push(k);
      expected.push(365 * (i - 1) + day);
      expect(plan.steps[365 * i + day]!.upstream).toEqual(expected);
    }
    expect(plan.steps[0]!.upstream).toEqual([]);
    // Days before 2025-01-01 are read from a0…a19 but not materialised.
    expect(plan.missing).toHaveLength(20);
    expect(plan.missing[0]).toMatchObject({
      assetKey: "scale/a00",
      neededBy: "scale/a05",
      count: 6,
      sample: days("2024-12-26", "2024-12-31"),
    });
  });
});
