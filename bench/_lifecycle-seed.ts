// The data-lifecycle benchmarks' (wipe, erasure) starting point, seeded with bulk SQL.
import type { Runtime } from "../src/cli/index.js";
import type { PartitionsSpec } from "../src/partitions/index.js";
import { openBenchRuntime, storeBenchDefinitions } from "./_definitions.js";
import { hourlyStart, seedHistory } from "./_seed-history.js";
import type { BenchScope } from "./_setup.js";

/**
 * A bench runtime on a scratch database with two hourly assets of `count` partitions, `bench/raw` and
 * `bench/clean` reading it, every partition of both materialised (statuses, events, lineage) with bulk SQL.
 * What the data-lifecycle benchmarks (wipe, erasure) start from; they add the outputs they need.
 */
export async function seedRawAndClean(
  scope: BenchScope,
  name: string,
  count: number,
): Promise<{ runtime: Runtime; spec: PartitionsSpec; history: Awaited<ReturnType<typeof seedHistory>>; seedMs: number }> {
  const url = await scope.scratchDatabase(name);
  const dir = await scope.tempDir(name);
  const runtime = await openBenchRuntime(scope, url, dir);
  const start = hourlyStart(count);
  await storeBenchDefinitions(
    runtime.database.db,
    dir,
    [
      `import { asset, hourly } from "tributary";`,
      `const hours = hourly({ start: "${start}" });`,
      `export const raw = asset({ key: "bench/raw", partitions: hours }, async () => null);`,
      `export const clean = asset({ key: "bench/clean", partitions: hours, deps: { raw } }, async () => null);`,
    ].join("\n"),
    300_000,
  );
  const spec = (await runtime.graphs.current()).graph.get("bench/raw")!.partitions!;
  const started = performance.now();
  const history = await seedHistory(runtime.database.db, [
    { key: "bench/raw", partitions: spec, from: () => 0, status: () => "materialized", upstreams: [], codeVersion: null },
    { key: "bench/clean", partitions: spec, from: () => 0, status: () => "materialized", upstreams: ["bench/raw"], codeVersion: null },
  ]);
  return { runtime, spec, history, seedMs: performance.now() - started };
}
