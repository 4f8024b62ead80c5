import { describe, expect, it } from "vitest";
import { asset, check, daily, staticPartitions, timeWindow, dep } from "../../src/index.js";
import { AssetGraph, validateGraph, type SnapshotAsset, type SnapshotCheck } from "../../src/graph/index.js";
import type { AssetDefinition, CheckDefinition } from "../../src/sdk/index.js";
import { parsePlan, planRun, serializePlan } from "../../src/planner/index.js";
import { expectWellFormed, noop, nothing } from "./helpers.js";

const NOW = new Date("2025-04-15T00:00:00Z");
const d = daily({ start: "2025-03-01" });
const orders = asset({ key: "s/orders", partitions: d }, noop);
const clean = asset({ key: "s/clean", partitions: d, deps: { orders } }, noop);
const week = asset({ key: "s/week", partitions: d, deps: { clean: dep(clean, timeWindow({ startOffset: -6 })) } }, noop);

function graphWith(defs: AssetDefinition[], checks: CheckDefinition[]): { graph: AssetGraph; problems: ReturnType<typeof validateGraph> } {
  const assets: SnapshotAsset[] = defs.map((a) => ({ ...a.spec, file: "defs.ts", exportName: a.key.replace(/\W/g, "_") }));
  const snapshotChecks: SnapshotCheck[] = checks.map((c) => ({ ...c.spec, file: "checks.ts", exportName: c.spec.name }));
  return { graph: new AssetGraph(assets, snapshotChecks), problems: validateGraph(assets, snapshotChecks) };
}

const label = (s: { assetKey: string; partitionKey: string; check?: string }) =>
  `${s.assetKey}${s.check ? `[${s.check}]` : ""}@${s.partitionKey}`;

describe("planning asset checks", () => {
  it("puts each check's steps after its asset's, and a blocking check before every reader of the partition", () => {
    const { graph, problems } = graphWith(
      [orders, clean, week],
      [
        check(orders, { name: "rows", blocking: true }, () => ({ passed: true })),
        check(orders, { name: "soft" }, () => ({ passed: true })),
      ],
    );
    expect(problems).toEqual([]);
    const plan = planRun({
      graph,
      version: 1,
      assets: ["s/orders", "s/clean"],
      partitions: { kind: "range", from: "2025-03-01", to: "2025-03-02" },
      now: NOW,
      materialized: nothing,
      includeUpstream: false,
    });
    expectWellFormed(plan);
    expect(plan.steps.map(label)).toEqual([
      "s/orders@2025-03-01",
      "s/orders@2025-03-02",
      "s/orders[rows]@2025-03-01",
      "s/orders[rows]@2025-03-02",
      "s/orders[soft]@2025-03-01",
      "s/orders[soft]@2025-03-02",
      "s/clean@2025-03-01",
      "s/clean@2025-03-02",
    ]);
    const at = (l: string) => plan.steps.findIndex((s) => label(s) === l);
    expect(plan.steps[at("s/orders[rows]@2025-03-02")]!.upstream).toEqual([at("s/orders@2025-03-02")]);
    expect(plan.steps[at("s/clean@2025-03-02")]!.upstream).toEqual([at("s/orders@2025-03-02"), at("s/orders[rows]@2025-03-02")]);
    // Stored and read back with the check names.
    expect(parsePlan(JSON.parse(JSON.stringify(serializePlan(plan))))).toEqual(plan);
  });

  it("runs a check only on its partitions (keys, or a time range)", () => {
    const { graph, problems } = graphWith(
      [orders],
      [
        check(orders, { name: "listed", partitions: ["2025-03-02"] }, () => ({ passed: true })),
        check(orders, { name: "ranged", partitions: { from: "2025-03-02" } }, () => ({ passed: true })),
      ],
    );
    expect(problems).toEqual([]);
    const plan = planRun({
      graph,
      version: 1,
      assets: ["s/orders"],
      partitions: { kind: "range", from: "2025-03-01", to: "2025-03-03" },
      now: NOW,
      materialized: nothing,
      includeUpstream: false,
    });
    expect(plan.steps.filter((s) => s.check).map(label)).toEqual([
      "s/orders[listed]@2025-03-02",
      "s/orders[ranged]@2025-03-02",
      "s/orders[ranged]@2025-03-03",
    ]);
  });

  it("refuses partitions that do not fit the asset, naming the file, asset and check", () => {
    const colours = asset({ key: "s/colours", partitions: staticPartitions(["red", "blue"]) }, noop);
    const flat = asset({ key: "s/flat" }, noop);
    const { problems } = graphWith(
      [orders, colours, flat],
      [
        check(orders, { name: "typo", partitions: ["2025-3-02"] }, () => ({ passed: true })),
        check(orders, { name: "backwards", partitions: { from: "2025-03-05", to: "2025-03-01" } }, () => ({ passed: true })),
        check(colours, { name: "ranged", partitions: { from: "blue" } }, () => ({ passed: true })),
        check(colours, { name: "green", partitions: ["green"] }, () => ({ passed: true })),
        check(flat, { name: "keys", partitions: ["x"] }, () => ({ passed: true })),
      ],
    );
    expect(problems.map((p) => [p.code, p.assetKey, p.checkName, p.message])).toEqual([
      [
        "GRAPH_CHECK_PARTITIONS_INVALID",
        "s/colours",
        "green",
        'checks.ts: asset "s/colours": check "green": partitions "green" are not partitions of the asset',
      ],
      [
        "GRAPH_CHECK_PARTITIONS_INVALID",
        "s/colours",
        "ranged",
        'checks.ts: asset "s/colours": check "ranged": a partitions range (from/to) needs a time-partitioned asset; list the keys instead',
      ],
      [
        "GRAPH_CHECK_PARTITIONS_INVALID",
        "s/flat",
        "keys",
        'checks.ts: asset "s/flat": check "keys": partitions are given, but the asset is not partitioned; leave partitions out',
      ],
      [
        "GRAPH_CHECK_PARTITIONS_INVALID",
        "s/orders",
        "backwards",
        'checks.ts: asset "s/orders": check "backwards": the range ends (2025-03-01) before it starts (2025-03-05)',
      ],
      [
        "GRAPH_CHECK_PARTITIONS_INVALID",
        "s/orders",
        "typo",
        'checks.ts: asset "s/orders": check "typo": partitions "2025-3-02" are not partitions of the asset',
      ],
    ]);
    expect(() => check(orders, { name: "empty", partitions: [] }, () => ({ passed: true }))).toThrow(/at least one partition key/);
  });
});
