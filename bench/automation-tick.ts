/**
 * Automation tick benchmark: 10 000 assets (half daily, half hourly, a year of
 * history, ~5 deps each; eager, onCron and onMissing mixed), evaluated by the
 * pure tick: a first full evaluation (no state yet), a steady full evaluation,
 * and an incremental one after 50 upstream events. Prints one JSON object.
 *
 *   npx tsx bench/automation-tick.ts [--assets 10000]
 */
import { parseArgs } from "node:util";
import { AssetGraph, validateGraph, type SnapshotAsset } from "../src/graph/index.js";
import { asset, daily, dep, eager, hourly, onCron, onMissing, type AssetDefinition } from "../src/index.js";
import { partitionSpace, PartitionSubset, type PartitionSpace } from "../src/partitions/index.js";
import { runAutomationTick, type AssetAutomationState, type AssetView } from "../src/reconciler/index.js";
import { printResult } from "./_setup.js";

const { values } = parseArgs({ options: { assets: { type: "string", default: "10000" } } });
const N = Number(values.assets);
const DEPS = 5;

// Deterministic pseudo-random numbers, so every run builds the same graph.
let seed = 42;
const random = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;

const days = daily({ start: "2025-01-01" });
const hours = hourly({ start: "2025-01-01T00:00" });
const now = new Date("2026-01-01T00:30:00Z");

const buildStarted = performance.now();
const defs: AssetDefinition[] = [];
const dailyKeys: AssetDefinition[] = [];
const hourlyKeys: AssetDefinition[] = [];
for (let i = 0; i < N; i++) {
  const isHourly = i % 2 === 1;
  const pool = isHourly ? hourlyKeys : dailyKeys;
  const deps: Record<string, ReturnType<typeof dep>> = {};
  // ~5 upstreams among the earlier assets of the same cadence (the first ones are roots).
  for (let d = 0; d < DEPS && pool.length > 0; d++) {
    const up = pool[Math.floor(random() * pool.length)]!;
    deps[`d${d}`] = dep(up);
  }
  const r = random();
  const automation =
    pool.length < 50
      ? onCron(isHourly ? "5 * * * *" : "0 1 * * *")
      : r < 0.7
        ? eager()
        : r < 0.9
          ? onCron(isHourly ? "5 * * * *" : "0 1 * * *")
          : onMissing();
  const def = asset({ key: `bench/a${i}`, partitions: isHourly ? hours : days, automation, deps }, async () => null);
  defs.push(def);
  pool.push(def);
}
const assets: SnapshotAsset[] = defs.map((d) => ({ ...d.spec, file: "bench.ts", exportName: `a${d.key.slice(7)}` }));
const problems = validateGraph(assets);
if (problems.length) throw new Error(problems[0]!.message);
const graph = new AssetGraph(assets);
const buildMs = performance.now() - buildStarted;

// A year of history: everything materialised except the newest partition.
const spaces = new Map<string, PartitionSpace>();
const spaceOf = (key: string) => {
  let s = spaces.get(key);
  if (!s) spaces.set(key, (s = partitionSpace(graph.require(key).partitions!)));
  return s;
};
const history = new Map<string, PartitionSubset>();
for (const a of assets) history.set(a.key, PartitionSubset.range(0, spaceOf(a.key).count(now) - 1));
const totalPartitions = assets.reduce((n, a) => n + spaceOf(a.key).count(now), 0);

const updated = new Map<string, PartitionSubset>();
const inProgress = new Map<string, PartitionSubset>();
const view = (key: string): AssetView => ({
  materialized: history.get(key)!,
  failed: PartitionSubset.EMPTY,
  inProgress: inProgress.get(key) ?? PartitionSubset.EMPTY,
  upstreamUpdated: updated.get(key) ?? PartitionSubset.EMPTY,
  codeVersionChanged: PartitionSubset.EMPTY,
  paused: false,
  updateCauses: [],
});

const states = new Map<string, AssetAutomationState>();
const tick = (at: Date, only?: ReadonlySet<string>) => {
  const t0 = performance.now();
  const r = runAutomationTick({ graph, ctx: undefined, now: at, view, states, only });
  const ms = performance.now() - t0;
  for (const [k, s] of r.states) states.set(k, s);
  // What was requested is in progress at the next tick, as the created runs would be.
  for (const [k, s] of r.requested) inProgress.set(k, (inProgress.get(k) ?? PartitionSubset.EMPTY).union(s));
  return { ms: Number(ms.toFixed(1)), evaluated: r.evaluated, runs: r.runs.length, records: r.records.length };
};

const first = tick(now);
const steady = tick(new Date(now.getTime() + 1_000));

// 50 events: 50 upstream partitions re-materialised somewhere in the past year.
const touched = new Set<string>();
for (let e = 0; e < 50; e++) {
  const up = assets[Math.floor(random() * assets.length)]!;
  const partition = Math.floor(random() * spaceOf(up.key).count(now) - 1);
  for (const down of graph.downstreamOf(up.key)) {
    if (!down.automation) continue;
    touched.add(down.key);
    // Same cadence, identity mappings: the downstream partition with the same index.
    updated.set(down.key, (updated.get(down.key) ?? PartitionSubset.EMPTY).union(PartitionSubset.single(Math.max(0, partition))));
  }
}
const incremental = tick(new Date(now.getTime() + 2_000), touched);

printResult({
  bench: "automation-tick",
  assets: N,
  depsPerAsset: DEPS,
  partitions: totalPartitions,
  buildGraphMs: Number(buildMs.toFixed(0)),
  firstFullTick: first,
  steadyFullTick: steady,
  incrementalAfter50Events: { ...incremental, downstreamAssets: touched.size },
});
