import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterEach, beforeEach, expect, it } from "vitest";
import { clearPartitions, createApiApp, type ClearPartitionsRequest } from "../../src/api/index.js";
import { GraphCache } from "../../src/storage/index.js";
import { describePostgres } from "../support/pg.js";
import { apiServicesOn } from "../support/api-services.js";
import { Harness } from "./harness.js";

// up (daily) → day (daily, fails where a marker file exists) → week (weekly rollup of the days).
const defs = (markerDir: string) => `
import { existsSync } from "node:fs";
import { asset, daily, dep, timeWindow, weekly } from "tributary";
const days = daily({ start: "2025-01-06" });
export const up = asset({ key: "cl/up", partitions: days }, async (ctx) => ctx.partition.key);
export const day = asset({ key: "cl/day", partitions: days, deps: { up }, retries: 0 }, async (ctx, { up }) => {
  if (existsSync(${JSON.stringify(markerDir)} + "/fail-" + ctx.partition.key)) throw new Error("marker says fail " + ctx.partition.key);
  return { day: up };
});
export const week = asset({ key: "cl/week", partitions: weekly({ start: "2025-01-06" }), deps: { day: dep(day, timeWindow()) } }, async (ctx, { day }) => day.length);
`;

describePostgres("execution: clear and rerun", () => {
  let h: Harness | undefined;
  let markers: string;
  beforeEach(async () => {
    markers = await mkdtemp(path.join(tmpdir(), "tributary-clear-markers-"));
  });
  afterEach(async () => {
    await h?.stop();
    h = undefined;
    await rm(markers, { recursive: true, force: true });
  });

  const clear = (request: ClearPartitionsRequest) =>
    clearPartitions({ graphs: h!.graphs, runs: h!.runs, definitions: h!.definitions }, request, new Date());
  const runCount = async () => Number((await sql<{ n: string }>`select count(*) as n from runs`.execute(h!.db)).rows[0]!.n);
  /** Two full weeks materialised: 2025-01-06 … 2025-01-19. */
  const seed = async () => {
    h = await Harness.create({ files: { "clear.ts": defs(markers) } });
    const seeded = await h.waitForRun(await h.launch(["cl/up", "cl/day", "cl/week"], { from: "2025-01-06", to: "2025-01-19" }));
    return seeded;
  };

  it("clears a range with --downstream: exactly those days and the affected weeks rerun, upstream stays", async () => {
    const seeded = await seed();
    expect(seeded.status).toBe("success");
    expect(seeded.steps.filter((s) => s.assetKey === "cl/week").map((s) => s.partitionKey)).toEqual(["2025-01-06", "2025-01-13"]);

    // Three days across the week boundary: both weeks are affected.
    const cleared = await clear({ assetKey: "cl/day", from: "2025-01-11", to: "2025-01-13", downstream: true });
    expect(cleared.cleared).toEqual([
      { assetKey: "cl/day", count: 3, sample: ["2025-01-11", "2025-01-12", "2025-01-13"] },
      { assetKey: "cl/week", count: 2, sample: ["2025-01-06", "2025-01-13"] },
    ]);
    const run = await h!.waitForRun(cleared.runId);
    expect(run.status).toBe("success");
    expect(run.origin).toBe("rerun");
    expect(run.steps.map((s) => `${s.assetKey}@${s.partitionKey}`)).toEqual([
      "cl/day@2025-01-11",
      "cl/day@2025-01-12",
      "cl/day@2025-01-13",
      "cl/week@2025-01-06",
      "cl/week@2025-01-13",
    ]);
    // No step of the upstream asset: its results stay and are read as they are.
    expect(run.steps.some((s) => s.assetKey === "cl/up")).toBe(false);
    // Each week waits for the cleared days it reads (and only those: the rest is materialised).
    const byId = new Map(run.steps.map((s) => [s.id, s]));
    const upstreamOf = (key: string) =>
      run.steps.find((s) => s.assetKey === "cl/week" && s.partitionKey === key)!.upstream.map((id) => byId.get(id)!.partitionKey);
    expect(upstreamOf("2025-01-06")).toEqual(["2025-01-11", "2025-01-12"]);
    expect(upstreamOf("2025-01-13")).toEqual(["2025-01-13"]);
    const weekOut = await sql<{ inline_value: unknown }>`
      select inline_value from outputs where run_id = ${run.id} and asset_key = 'cl/week' order by partition_key`.execute(h!.db);
    expect(weekOut.rows.map((r) => r.inline_value)).toEqual([7, 7]);

    // Without --downstream only the chosen partitions rerun.
    const alone = await clear({ assetKey: "cl/day", partition: "2025-01-08" });
    expect((await h!.waitForRun(alone.runId)).steps.map((s) => `${s.assetKey}@${s.partitionKey}`)).toEqual(["cl/day@2025-01-08"]);
  });

  it("onlyFailed picks only the failed partitions (and their downstream ones)", async () => {
    await writeFile(path.join(markers, "fail-2025-01-08"), "");
    const seeded = await seed();
    expect(seeded.status).toBe("failed");
    await rm(path.join(markers, "fail-2025-01-08"));

    const cleared = await clear({ assetKey: "cl/day", from: "2025-01-06", to: "2025-01-19", onlyFailed: true, downstream: true });
    expect(cleared.cleared).toEqual([
      { assetKey: "cl/day", count: 1, sample: ["2025-01-08"] },
      { assetKey: "cl/week", count: 1, sample: ["2025-01-06"] },
    ]);
    const run = await h!.waitForRun(cleared.runId);
    expect(run.status).toBe("success");
    expect(run.steps.map((s) => `${s.assetKey}@${s.partitionKey}`)).toEqual(["cl/day@2025-01-08", "cl/week@2025-01-06"]);

    // Nothing failed any more: nothing to clear, no run.
    const before = await runCount();
    await expect(clear({ assetKey: "cl/day", onlyFailed: true })).rejects.toMatchObject({ code: "CLEAR_NOTHING" });
    expect(await runCount()).toBe(before);
  });

  it("rejects bad input without writing a run", async () => {
    await seed();
    const before = await runCount();
    await expect(clear({ assetKey: "cl/dya", partition: "2025-01-08" })).rejects.toMatchObject({ code: "GRAPH_UNKNOWN_ASSET" });
    const reversed = clear({ assetKey: "cl/day", from: "2025-01-12", to: "2025-01-08" });
    await expect(reversed).rejects.toMatchObject({ name: "PartitionError" });
    await expect(reversed).rejects.toThrow(/cl\/day/);
    const outside = clear({ assetKey: "cl/day", partition: "2024-12-31" });
    await expect(outside).rejects.toMatchObject({ name: "PartitionError" });
    await expect(outside).rejects.toThrow(/cl\/day.*2025-01-06/s);
    await expect(clear({ assetKey: "cl/day", partition: "2025-01-08", onlyFailed: true })).rejects.toMatchObject({ code: "CLEAR_NOTHING" });
    await expect(clear({ assetKey: "cl/day" })).rejects.toMatchObject({ code: "PARTITION_SELECTION_REQUIRED" });
    expect(await runCount()).toBe(before);
  });

  it("GraphQL clearPartitions: bad input writes no run; returns the rerun", async () => {
    await seed();
    const context = apiServicesOn(h!.db, { graphs: new GraphCache(h!.definitions), definitions: h!.definitions, runs: h!.runs });
    const app = createApiApp({ context, ping: async () => {}, version: "test" });
    const mutate = async (input: Record<string, unknown>) => {
      const res = await app.request("/graphql", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          query: `mutation ($input: ClearPartitionsInput!) { clearPartitions(input: $input) { id origin stepsTotal steps { assetKey partitionKey } } }`,
          variables: { input },
        }),
      });
      return (await res.json()) as { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] };
    };
    const before = await runCount();
    // Each error keeps its stable code in-process too (vitest.config.ts loads one copy of graphql); no run is written.
    for (const input of [
      { assetKey: "" },
      { assetKey: "cl/day", from: "2025-01-12", to: "2025-01-08" },
      { assetKey: "cl/nope", partition: "2025-01-08" },
    ]) {
      const errors = (await mutate(input)).errors;
      expect(errors?.length).toBe(1);
      expect(errors?.[0]?.extensions?.code, JSON.stringify(errors)).toMatch(/^(INPUT_INVALID|PARTITION_[A-Z_]+|GRAPH_UNKNOWN_ASSET)$/);
    }
    expect(await runCount()).toBe(before);

    const ok = await mutate({ assetKey: "cl/day", partition: "2025-01-15", downstream: true });
    expect(ok.errors).toBeUndefined();
    const run = (
      ok.data as {
        clearPartitions: { id: string; origin: string; stepsTotal: number; steps: { assetKey: string; partitionKey: string }[] };
      }
    ).clearPartitions;
    expect(run).toMatchObject({ origin: "rerun", stepsTotal: 2 });
    expect(run.steps.map((s) => `${s.assetKey}@${s.partitionKey}`)).toEqual(["cl/day@2025-01-15", "cl/week@2025-01-13"]);
    expect((await h!.waitForRun(run.id)).status).toBe("success");
  });
});
