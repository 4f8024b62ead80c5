// What an analyst waits for while writing assets: importing tributary/testing in a fresh process, in-memory
// materialisations of growing size (one day, a week and its rollup, a year of days with their checks and weeks),
// and `tributary check` with and without `--types` on the demo. Prints one JSON object.
//   npx tsx bench/authoring.ts [--samples 5]
import { spawn } from "node:child_process";
import path from "node:path";
import { parseArgs } from "node:util";
import { asset, check, daily, dep, timeWindow, weekly } from "../src/index.js";
import { materializeInMemory } from "../src/testing/index.js";
import { p50p95max, printResult, round1, timed } from "./_setup.js";

const { values } = parseArgs({ options: { samples: { type: "string", default: "5" } } });
const SAMPLES = Number(values.samples);
if (!Number.isInteger(SAMPLES) || SAMPLES < 1) throw new Error(`--samples: expected a positive integer, got ${values.samples}`);
const ROOT = path.resolve(import.meta.dirname, "..");
const BIN = path.join(ROOT, "bin/tributary.mjs");

/** Wall time of a child process to its exit; a non-zero exit is an error. */
async function processMs(args: readonly string[]): Promise<number> {
  const { ms } = await timed(
    () =>
      new Promise<void>((resolve, reject) => {
        const child = spawn(process.execPath, args, {
          cwd: ROOT,
          stdio: ["ignore", "ignore", "pipe"],
          env: { ...process.env, DATABASE_URL: "" },
        });
        let stderr = "";
        child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
        child.once("error", reject);
        child.once("close", (code) => (code === 0 ? resolve() : reject(new Error(`${args.join(" ")} exited ${code}: ${stderr}`))));
      }),
  );
  return ms;
}

async function sampled(work: () => Promise<number>): Promise<{ p50: number; p95: number; max: number }> {
  const ms: number[] = [];
  for (let i = 0; i < SAMPLES; i++) ms.push(await work());
  return p50p95max(ms);
}

const days = daily({ start: "2025-01-01", timezone: "UTC" });
const orders = asset({ key: "bench/orders", partitions: days }, (ctx) => {
  ctx.log.info("day", { key: ctx.partition.key });
  return { day: ctx.partition.key, rows: 10, revenueCents: 1_000 };
});
check(orders, { name: "not_empty", blocking: true }, (_ctx, v) => ({ passed: (v?.rows ?? 0) > 0 }));
const weeks = asset(
  { key: "bench/weekly", partitions: weekly({ start: "2025-01-06", timezone: "UTC" }), deps: { days: dep(orders, timeWindow()) } },
  (_ctx, { days }) => ({ days: days.length, revenueCents: days.reduce((n, d) => n + (d?.revenueCents ?? 0), 0) }),
);
const NOW = "2026-01-10T00:00:00Z";

const inMemory = async (options: Parameters<typeof materializeInMemory>[1], list: readonly unknown[]): Promise<number> => {
  const { value, ms } = await timed(() => materializeInMemory(list, { now: NOW, ...options }));
  if (!value.success) throw new Error("an in-memory materialisation failed");
  return ms;
};

// The first call pays for loading the step runtime's lazy modules: measured on its own.
const firstCallMs = await inMemory({ partition: "2025-03-10" }, [orders]);
const oneDay = await sampled(() => inMemory({ partition: "2025-03-10" }, [orders]));
const week = await sampled(() => inMemory({ from: "2025-03-10", to: "2025-03-16" }, [orders, weeks]));
const year = await sampled(() => inMemory({ from: "2025-01-06", to: "2026-01-04" }, [orders, weeks]));
const importTesting = await sampled(() =>
  processMs(["--import", "tsx", "-e", `await import(${JSON.stringify(path.join(ROOT, "src/testing/index.ts"))})`]),
);
const checkPlain = await sampled(() => processMs([BIN, "check"]));
const checkTypes = await sampled(() => processMs([BIN, "check", "--types"]));

printResult({
  bench: "authoring",
  samples: SAMPLES,
  importTestingMs: importTesting,
  materializeInMemoryMs: {
    firstCall: round1(firstCallMs),
    oneDay,
    // 7 days, 7 checks, 1 week: 15 steps.
    weekWithRollup: week,
    // 364 days, 364 checks, 52 weeks: 780 steps.
    yearWithRollups: year,
  },
  demoCheckMs: checkPlain,
  demoCheckTypesMs: checkTypes,
});
