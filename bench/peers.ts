// Tributary side by side with its peers in one run: the execution workloads W1–W3 (bench/_workloads.ts) on
// Tributary (local executor, one reconciler), graphile-worker (batched dequeue and completion) and BullMQ (plain
// queue), interleaved and repeated, each system in a fresh database or Redis prefix for every repetition.
// Prints one JSON line per system and repetition, then the medians and the ratios Tributary / peer.
//
//   npx tsx bench/peers.ts [--repeat 3] [--systems tributary,graphile-worker,bullmq]
//
// The peers do less work per step: graphile-worker knows jobs, not dependencies (a job enqueues its downstream
// job; a counter row gathers W2's fan-in), keeps no run, try or partition state and no output; BullMQ in addition
// keeps its queue in Redis (no fsync, no durability) and removes completed jobs.
import { parseArgs } from "node:util";
import { GRAPHILE_SETTINGS, startGraphileBench } from "./_peer-graphile.js";
import { BULLMQ_SETTINGS, startBullmqBench } from "./_peer-bullmq.js";
import { ascending, withScope, type BenchScope } from "./_setup.js";
import { startTributaryBench } from "./_tributary.js";
import { WORKLOADS, type PeerBench, type WorkloadResults } from "./_workloads.js";

const SYSTEMS = {
  tributary: (scope: BenchScope): Promise<PeerBench> => startTributaryBench(scope, 1),
  "graphile-worker": startGraphileBench,
  bullmq: (scope: BenchScope) => startBullmqBench(scope, process.env.REDIS_URL || "redis://127.0.0.1:6379"),
} as const;
type System = keyof typeof SYSTEMS;

const { values: args } = parseArgs({
  options: { repeat: { type: "string", default: "3" }, systems: { type: "string", default: Object.keys(SYSTEMS).join(",") } },
});
const repeat = Number(args.repeat);
const systems = args.systems.split(",") as System[];
for (const s of systems)
  if (!(s in SYSTEMS)) throw new Error(`--systems: unknown system ${JSON.stringify(s)} (known: ${Object.keys(SYSTEMS).join(", ")})`);
if (!Number.isInteger(repeat) || repeat < 1) throw new Error(`--repeat must be a positive integer, got ${JSON.stringify(args.repeat)}`);

/** The figures compared, how each is read from a run, and whether higher is better. */
const FIGURES = [
  { name: "W1 steps/s", of: (r: WorkloadResults) => r.w1?.stepsPerSec, higherIsBetter: true },
  { name: "W1 hand-off p99 (ms)", of: (r: WorkloadResults) => r.w1?.handoffMs.p99, higherIsBetter: false },
  { name: "W2 wall time (ms)", of: (r: WorkloadResults) => r.w2?.wallMs, higherIsBetter: false },
  { name: "W3 steps/s", of: (r: WorkloadResults) => r.w3?.stepsPerSec, higherIsBetter: true },
] as const;

async function main(): Promise<void> {
  const runs: { system: System; results: WorkloadResults }[] = [];
  for (let rep = 1; rep <= repeat; rep++) {
    // Each repetition starts with the next system, so that none always runs first or last.
    const order = systems.map((_, i) => systems[(i + rep - 1) % systems.length]!);
    for (const system of order) {
      const results = await withScope(async (scope) => {
        const bench = await SYSTEMS[system](scope);
        const out: WorkloadResults = {};
        for (const w of WORKLOADS) {
          const { runId: _runId, ...result } = (await bench[w]()) as { runId?: string } & object;
          (out as Record<string, unknown>)[w] = result;
        }
        return out;
      });
      runs.push({ system, results });
      console.log(JSON.stringify({ bench: "peers", system, repetition: rep, ...results }));
    }
  }
  const median = (system: System, of: (r: WorkloadResults) => number | undefined) => {
    const values = ascending(runs.filter((r) => r.system === system).flatMap((r) => of(r.results) ?? []));
    return values.length === 0
      ? null
      : values.length % 2 === 1
        ? values[(values.length - 1) / 2]!
        : (values[values.length / 2 - 1]! + values[values.length / 2]!) / 2;
  };
  const medians = Object.fromEntries(systems.map((s) => [s, Object.fromEntries(FIGURES.map((f) => [f.name, median(s, f.of)]))]));
  const peers = systems.filter((s) => s !== "tributary");
  const ratios = Object.fromEntries(
    peers.map((peer) => [
      peer,
      Object.fromEntries(
        FIGURES.map((f) => {
          const t = medians.tributary?.[f.name];
          const p = medians[peer]?.[f.name];
          return [f.name, t == null || p == null ? null : Math.round((t / p) * 100) / 100];
        }),
      ),
    ]),
  );
  console.log(
    JSON.stringify({ bench: "peers", repeat, settings: { graphileWorker: GRAPHILE_SETTINGS, bullmq: BULLMQ_SETTINGS }, medians, ratios }),
  );
  // The table for docs/benchmarks.md.
  const header = ["figure (median)", ...systems, ...peers.map((p) => `Tributary / ${p}`)];
  const lines = [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`];
  for (const f of FIGURES) {
    const cells = [
      `${f.name} (${f.higherIsBetter ? "higher" : "lower"} is better)`,
      ...systems.map((s) => String(medians[s]?.[f.name] ?? "–")),
      ...peers.map((p) => (ratios[p]?.[f.name] == null ? "–" : `${ratios[p]![f.name]}×`)),
    ];
    lines.push(`| ${cells.join(" | ")} |`);
  }
  console.log(lines.join("\n"));
}

await main();
