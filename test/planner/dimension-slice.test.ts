import { describe, expect, it } from "vitest";
import { daily, multiPartitions, staticPartitions } from "../../src/index.js";
import type { SnapshotAsset } from "../../src/graph/index.js";
import { dimensionSliceKeys } from "../../src/planner/index.js";

// The cross product of keys or ranges per dimension, in the asset's key order (`date|region`), validated per dimension.
const NOW = new Date("2025-03-20T00:00:00Z");
const asset = (partitions: unknown) => ({ key: "shop/regional_sales", partitions }) as unknown as SnapshotAsset;
const sales = asset(multiPartitions({ date: daily({ start: "2025-03-01" }), region: staticPartitions(["eu", "us", "apac"]) }));

describe("dimensionSliceKeys", () => {
  it("takes a range of one dimension and a list of another; a dimension left out is all its keys", () => {
    expect(
      dimensionSliceKeys(
        sales,
        [
          { name: "region", keys: ["eu"] },
          { name: "date", from: "2025-03-02", to: "2025-03-04" },
        ],
        undefined,
        NOW,
      ),
    ).toEqual(["2025-03-02|eu", "2025-03-03|eu", "2025-03-04|eu"]);
    expect(dimensionSliceKeys(sales, [{ name: "date", keys: ["2025-03-05"] }], undefined, NOW)).toEqual([
      "2025-03-05|eu",
      "2025-03-05|us",
      "2025-03-05|apac",
    ]);
    // An open end: the dimension's latest existing key.
    expect(
      dimensionSliceKeys(
        sales,
        [
          { name: "date", from: "2025-03-18" },
          { name: "region", keys: ["us"] },
        ],
        undefined,
        NOW,
      ),
    ).toEqual(["2025-03-18|us", "2025-03-19|us"]);
  });

  it("names the asset and the unknown dimension or key, and refuses what is not multi-partitioned", () => {
    expect(() => dimensionSliceKeys(sales, [{ name: "regon", keys: ["eu"] }], undefined, NOW)).toThrow(
      /asset "shop\/regional_sales" has no dimension "regon" \(did you mean "region"\?\); its dimensions are "date", "region"/,
    );
    expect(() => dimensionSliceKeys(sales, [{ name: "region", keys: ["mars"] }], undefined, NOW)).toThrow(
      /asset "shop\/regional_sales", dimension "region": "mars" is not a partition/,
    );
    expect(() =>
      dimensionSliceKeys(
        sales,
        [
          { name: "region", keys: ["eu"] },
          { name: "region", keys: ["us"] },
        ],
        undefined,
        NOW,
      ),
    ).toThrow(/selected twice/);
    expect(() => dimensionSliceKeys(sales, [{ name: "region", keys: ["eu"], from: "eu" }], undefined, NOW)).toThrow(/not both/);
    expect(() =>
      dimensionSliceKeys(asset(daily({ start: "2025-03-01" })), [{ name: "date", keys: ["2025-03-02"] }], undefined, NOW),
    ).toThrow(/partitioned by one dimension only/);
  });
});
