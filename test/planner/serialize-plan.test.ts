import { describe, expect, it } from "vitest";
import { asset, daily, dep, InputError, timeWindow } from "../../src/index.js";
import { parsePlan, planRun, serializePlan, type RunPlan } from "../../src/planner/index.js";
import { graphOf, noop, nothing } from "./helpers.js";

const d = daily({ start: "2025-01-01" });
const orders = asset({ key: "sales/orders", partitions: d }, noop);
const revenue = asset({ key: "sales/revenue_7d", partitions: d, deps: { orders: dep(orders, timeWindow({ startOffset: -6 })) } }, noop);
const graph = graphOf(orders, revenue);

const plan = planRun({
  graph,
  version: 12,
  assets: ["sales/orders", "sales/revenue_7d"],
  partitions: { kind: "range", from: "2025-03-01", to: "2025-03-10" },
  now: new Date("2025-04-01T00:00:00Z"),
  materialized: nothing,
  includeUpstream: false,
});

describe("serializePlan / parsePlan", () => {
  it("round-trips through JSON text and through a parsed value", () => {
    const stored = serializePlan(plan);
    expect(parsePlan(JSON.stringify(stored))).toEqual(plan);
    expect(parsePlan(JSON.parse(JSON.stringify(stored)))).toEqual(plan);
  });

  it("stores asset keys once and steps as arrays with range-encoded upstreams", () => {
    const stored = serializePlan(plan);
    expect(stored.format).toBe(1);
    expect(stored.version).toBe(12);
    expect(stored.assets).toEqual(["sales/orders", "sales/revenue_7d"]);
    expect(stored.steps[0]).toEqual([0, "2025-03-01", []]);
    // revenue_7d 2025-03-10 reads orders 03-04 … 03-10: steps 3 … 9.
    expect(stored.steps[19]).toEqual([1, "2025-03-10", [3, 10]]);
    expect(stored.missing).toEqual(plan.missing);
    expect(plan.missing).toHaveLength(1);
  });

  it("round-trips an empty plan and an unpartitioned step", () => {
    const empty: RunPlan = { version: 1, steps: [], missing: [] };
    expect(parsePlan(JSON.stringify(serializePlan(empty)))).toEqual(empty);
    const single: RunPlan = {
      version: 2,
      steps: [
        { index: 0, assetKey: "a", partitionKey: "", upstream: [] },
        { index: 1, assetKey: "b", partitionKey: "", upstream: [0] },
        { index: 2, assetKey: "c", partitionKey: "", upstream: [0, 1] },
      ],
      missing: [],
    };
    const stored = serializePlan(single);
    expect(stored.steps).toEqual([
      [0, "", []],
      [1, "", [0, 1]],
      [2, "", [0, 2]],
    ]);
    expect(parsePlan(stored)).toEqual(single);
  });

  it("rejects what serializePlan could not have written", () => {
    const good = serializePlan(plan);
    const cases: [unknown, RegExp][] = [
      ["{not json", /invalid stored run plan: not JSON/],
      [{ ...good, format: 2 }, /at "format"/],
      [{ ...good, extra: true }, /invalid stored run plan/],
      [{ ...good, steps: [[5, "2025-03-01", []]] }, /at "steps.0.0": asset index 5/],
      [
        {
          ...good,
          steps: [
            [0, "x", []],
            [0, "y", [0, 2]],
          ],
        },
        /step 1 reads step 1, which does not come before it/,
      ],
      [
        {
          ...good,
          steps: [
            [0, "x", []],
            [0, "y", [0]],
          ],
        },
        /pairs/,
      ],
      [
        {
          ...good,
          steps: [
            [0, "x", []],
            [0, "y", []],
            [0, "z", [1, 2, 0, 1]],
          ],
        },
        /ascending/,
      ],
      [{ ...good, missing: [{ assetKey: "a", neededBy: "b", reason: "gone", count: 1, sample: [], detail: "" }] }, /at "missing.0.reason"/],
    ];
    for (const [input, message] of cases) {
      let error: unknown;
      try {
        parsePlan(input);
      } catch (err) {
        error = err;
      }
      expect(error, String(message)).toBeInstanceOf(InputError);
      expect((error as InputError).code).toBe("PLAN_INVALID");
      expect((error as Error).message).toMatch(message);
    }
  });
});
