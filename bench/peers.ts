// Tributary side by side with its peers in one run: the execution workloads W1–W3 (bench/_workloads.ts) on
// Tributary (local executor, one reconciler), graphile-worker (batched dequeue and completion) and BullMQ (plain
// queue), interleaved and repeated, each system in a fresh database or Redis prefix for every repetition.
// Prints one JSON line per system and repetition, then the medians and the ratios Tributary / peer. W2 lasts a
// tenth of a second to a few tenths, so one run of it moves with the machine by a third either way: each repetition
// runs it --w2-samples times and counts the median.
//
//   npx tsx bench/peers.ts [--repeat 3] [--w2-samples 5] [--systems tributary,graphile-worker,bullmq]
//
// The peers do less work per step: graphile-worker knows jobs, not dependencies (a job enqueues its downstream
// job; a counter row gathers W2's fan-in), keeps no run, try or partition state and no output; BullMQ in addition
// keeps its queue in Redis (no fsync, no durability) and removes completed jobs.
import { parseArgs } from "node:util";
import { GRAPHILE_SETTINGS, startGraphileBench } from "./_peer-graphile.js";
import { BULLMQ_SETTINGS, startBullmqBench } from "./_peer-bullmq.js";
import { ascending, withScope, type BenchScope } from "./_setup.js";
import { startTributaryBench } from "./_tributary.js";
import { WORKLOADS, type PeerBench, type W2Result, type WorkloadResults } from "./_workloads.js";

const SYSTEMS = {
  tributary: (scope: BenchScope): Promise<PeerBench> => startTributaryBench(scope, 1),
  "graphile-worker": startGraphileBench,
  bullmq: (scope: BenchScope) => startBullmqBench(scope, process.env.REDIS_URL || "redis://127.0.0.1:6379"),
} as const;
type System = keyof typeof SYSTEMS;

const { values: args } = parseArgs({
  options: {
    repeat: { type: "string", default: "3" },
    "w2-samples": { type: "string", default: "5" },
    systems: { type: "string", default: Object.keys(SYSTEMS).join(",") },
  },
});
const repeat = Number(args.repeat);
const w2Samples = Number(args["w2-samples"]);
const systems = args.systems.split(",") as System[];
for (const s of systems)
  if (!(s in SYSTEMS)) throw new Error(`--systems: unknown system ${JSON.stringify(s)} (known: ${Object.keys(SYSTEMS).join(", ")})`);
if (!Number.isInteger(repeat) || repeat < 1) throw new Error(`--repeat must be a positive integer, got ${JSON.stringify(args.repeat)}`);
if (!Number.isInteger(w2Samples) || w2Samples < 1) {
  throw new Error(`--w2-samples must be a positive integer, got ${JSON.stringify(args["w2-samples"])}`);
}

/** The median of some values (the mean of the middle two for an even count); null for none. */
function median(values: readonly number[]): number | null {
  const sorted = ascending(values);
  if (sorted.length === 0) return null;
  const mid = sorted.length / 2;
  return sorted.length % 2 === 1 ? sorted[Math.floor(mid)]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

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
          if (w === "w2") {
            const runs: W2Result[] = [];
            for (let i = 0; i < w2Samples; i++) runs.push(await bench.w2());
            const samplesMs = runs.map((r) => r.wallMs);
            out.w2 = { steps: runs[0]!.steps, wallMs: median(samplesMs)!, samplesMs };
            continue;
          }
          const { runId: _runId, ...result } = (await bench[w]()) as { runId?: string } & object;
          (out as Record<string, unknown>)[w] = result;
        }
        return out;
      });
      runs.push({ system, results });
      console.log(JSON.stringify({ bench: "peers", system, repetition: rep, ...results }));
    }
  }
  const medianOf = (system: System, of: (r: WorkloadResults) => number | undefined) =>
    median(runs.filter((r) => r.system === system).flatMap((r) => of(r.results) ?? []));
  const medians = Object.fromEntries(systems.map((s) => [s, Object.fromEntries(FIGURES.map((f) => [f.name, medianOf(s, f.of)]))]));
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
    JSON.stringify({
      bench: "peers",
      repeat,
      w2Samples,
      settings: { graphileWorker: GRAPHILE_SETTINGS, bullmq: BULLMQ_SETTINGS },
      medians,
      ratios,
    }),
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
