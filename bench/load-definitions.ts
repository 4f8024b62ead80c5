// Loads 1 000 generated definitions files (1–3 daily-partitioned assets each,
// with dependencies on assets of earlier files) and prints one JSON object:
// total time, per-file load time percentiles, throughput, concurrency, the
// CPU time of the loader and of its child processes (Linux), and the time to
// build and hash the snapshot.
//   npx tsx bench/load-definitions.ts [--files 1000] [--concurrency N]
import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { buildSnapshot, hashSnapshot } from "../src/graph/index.js";
import { loadDefinitions } from "../src/loader/index.js";
import { ascending, nearestRank, printResult, round1, withScope } from "./_setup.js";

function arg(name: string): number | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : undefined;
}

const FILES = arg("files") ?? 1000;
const CONCURRENCY = arg("concurrency");

/** Deterministic pseudo-random numbers, so every run generates the same graph. */
function rng(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1_103_515_245 + 12_345) % 2_147_483_648;
    return s / 2_147_483_648;
  };
}

async function generate(dir: string): Promise<number> {
  const random = rng(42);
  const keys: string[] = [];
  let assetCount = 0;
  for (let f = 0; f < FILES; f++) {
    const group = `g${f % 20}`;
    const count = 1 + Math.floor(random() * 3);
    const lines = [`import { asset, daily, dep } from "tributary";`, ``, `const days = daily({ start: "2024-01-01" });`, ``];
    const mine: string[] = [];
    for (let a = 0; a < count; a++) {
      const key = `${group}/file${f}_asset${a}`;
      const deps: string[] = [];
      for (let d = 0; d < 3 && keys.length > 0; d++) {
        if (random() < 0.5) continue;
        const up = keys[Math.floor(random() * keys.length)]!;
        if (!deps.some((x) => x.includes(`"${up}"`))) deps.push(`up${d}: dep<number>("${up}")`);
      }
      lines.push(
        `export const asset${a} = asset(`,
        `  { key: "${key}", partitions: days, owner: "team:${group}", retries: 2${deps.length ? `, deps: { ${deps.join(", ")} }` : ""} },`,
        `  async (ctx) => ({ partition: ctx.partition.key, n: ${a} }),`,
        `);`,
        ``,
      );
      mine.push(key);
      assetCount++;
    }
    keys.push(...mine);
    const sub = path.join(dir, group);
    await mkdir(sub, { recursive: true });
    await writeFile(path.join(sub, `file${f}.ts`), lines.join("\n"));
  }
  return assetCount;
}

const percentile = (sorted: number[], p: number): number => nearestRank(sorted, p / 100) ?? 0;

/** CPU milliseconds of the child processes that have ended (Linux: /proc), or undefined. */
function childrenCpuMs(): number | undefined {
  try {
    const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
    // cutime and cstime, in clock ticks of 10 ms.
    return (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return undefined;
  }
}

await withScope(async (scope) => {
  const dir = await scope.tempDir("defs");
  const generatedAssets = await generate(dir);
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const childrenBefore = childrenCpuMs();
  const result = await loadDefinitions({ dir, ...(CONCURRENCY ? { concurrency: CONCURRENCY } : {}) });
  const totalMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const loaderCpuMs = (cpu.user + cpu.system) / 1000;
  const childrenAfter = childrenCpuMs();
  const childCpuMs = childrenBefore === undefined || childrenAfter === undefined ? undefined : childrenAfter - childrenBefore;

  const buildStarted = performance.now();
  const built = buildSnapshot(result.files);
  const buildMs = performance.now() - buildStarted;
  const hashStarted = performance.now();
  const hash = hashSnapshot(built.graph);
  const hashMs = performance.now() - hashStarted;

  const perFile = ascending(result.files.map((f) => f.loadMs));
  printResult({
    files: result.files.length,
    assets: result.snapshot.assets.length,
    generatedAssets,
    errors: result.files.filter((f) => f.status === "error").length,
    problems: result.problems.length,
    concurrency: result.concurrency,
    totalMs: Math.round(totalMs),
    filesPerSecond: round1(result.files.length / (totalMs / 1000)),
    perFileMs: { p50: round1(percentile(perFile, 50)), p95: round1(percentile(perFile, 95)), max: round1(perFile.at(-1) ?? 0) },
    // The loader process (compiling included: esbuild's own process is not counted) and its children, per file.
    cpuMsPerFile: {
      loader: round1(loaderCpuMs / result.files.length),
      ...(childCpuMs === undefined ? {} : { children: round1(childCpuMs / result.files.length) }),
    },
    snapshot: { buildAndValidateMs: round1(buildMs), hashMs: round1(hashMs), contentHash: hash.slice(0, 12) },
  });
  if (result.files.some((f) => f.status === "error")) {
    const first = result.files.find((f) => f.status === "error")!;
    console.error(`first error: ${first.file}: ${first.error?.message}`);
    process.exitCode = 1;
  }
});
