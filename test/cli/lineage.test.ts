import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startApiServer, type ApiServer } from "../api/triggers-seed.js";
import { materialisedLineageGraph } from "../api/lineage-graph.js";
import type { Harness } from "../execution/harness.js";
import { describePostgres } from "../support/pg.js";
import { graphqlAt, runCli } from "./run-cli.js";

interface LineageJson {
  ok: true;
  assetKey: string;
  partitionKey: string | null;
  direction: string;
  depth: number;
  assets: { key: string; depth: number; pii: unknown }[];
  start: { eventId: number } | null;
  materializations: { eventId: number; assetKey: string; partitionKey: string; depth: number; runId: string; createdAt: string }[];
  inputs: { eventId: number; upstreamEventId: number | null }[];
}
interface ErrorJson {
  ok: false;
  error: { code: string; message: string };
}

describePostgres("tributary lineage", () => {
  let h: Harness;
  let server: ApiServer;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "tributary-lineage-cli-"));
    h = await materialisedLineageGraph();
    server = await startApiServer(h.url);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    await h?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  /** In-process (nothing listens on port 9), or through the API server. */
  const lineage = (mode: "in-process" | "server", ...args: string[]) =>
    runCli(
      ["lineage", ...args, "--definitions", h.dir, "--data-dir", dataDir, "--url", mode === "server" ? server.url : "http://127.0.0.1:9"],
      {
        env: { DATABASE_URL: h.url },
      },
    );
  const json = async (mode: "in-process" | "server", ...args: string[]): Promise<LineageJson> => {
    const r = await lineage(mode, ...args, "--json");
    expect(r.code, r.stderr + r.stdout).toBe(0);
    return JSON.parse(r.stdout) as LineageJson;
  };
  const failure = async (mode: "in-process" | "server", ...args: string[]): Promise<ErrorJson["error"]> => {
    const r = await lineage(mode, ...args, "--json");
    expect(r.code, r.stderr + r.stdout).toBe(1);
    return (JSON.parse(r.stdout) as ErrorJson).error;
  };
  const rowCounts = async () =>
    (
      await sql<{ n: string }>`
        select (select count(*) from events) || '/' || (select count(*) from event_inputs) || '/' || (select count(*) from runs) || '/' ||
               (select count(*) from backfills) as n`.execute(h.db)
    ).rows[0]!.n;

  it("prints the same lineage in-process and through the server, upstream by default", async () => {
    const [local, remote] = await Promise.all([
      json("in-process", "reports/summary", "--partition", "2025-01-04", "--depth", "2"),
      json("server", "reports/summary", "--partition", "2025-01-04", "--depth", "2"),
    ]);
    expect(local).toMatchObject({ ok: true, assetKey: "reports/summary", partitionKey: "2025-01-04", direction: "upstream", depth: 2 });
    expect(local.assets.map((a) => a.key)).toEqual(["reports/summary", "mart/daily_report", "mart/rolling3d", "mart/enriched"]);
    expect(local.materializations).toHaveLength(6);
    expect(local.inputs).toHaveLength(6);
    expect(remote).toEqual(local);
  }, 60_000);

  it("follows --downstream, and prints it for people with the PII assets and what read what", async () => {
    const [down, human, plain] = await Promise.all([
      json("server", "raw/customers", "--partition", "2025-01-02", "--downstream", "--depth", "1"),
      lineage("in-process", "raw/customers", "--partition", "2025-01-02", "--downstream", "--depth", "1"),
      lineage("server", "mart/enriched"),
    ]);
    expect(down.materializations.map((m) => `${m.depth}:${m.assetKey}@${m.partitionKey}`)).toEqual([
      "0:raw/customers@2025-01-02",
      "1:clean/customers@2025-01-02",
    ]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain("downstream lineage of raw/customers partition 2025-01-02, depth 1");
    expect(human.stdout).toMatch(/0\s+raw\/customers\s+.*daily.*\["email","name"\]/);
    expect(human.stdout).toContain("raw/customers → clean/customers");
    const [start, read] = down.materializations;
    expect(human.stdout).toContain(`event ${read!.eventId} read raw/customers 2025-01-02 (event ${start!.eventId})`);
    expect(human.stdout).toContain(read!.runId);
    // A partitioned asset without --partition: the asset graph, and a hint.
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toContain("give --partition K");
  }, 60_000);

  it("refuses bad input with named errors in both modes, and writes nothing", async () => {
    const before = await rowCounts();
    for (const mode of ["in-process", "server"] as const) {
      const [unknown, outside] = await Promise.all([
        failure(mode, "raw/customer", "--partition", "2025-01-02"),
        failure(mode, "raw/customers", "--partition", "2024-12-31"),
      ]);
      expect(unknown.code).toBe("GRAPH_UNKNOWN_ASSET");
      expect(unknown.message).toContain('"raw/customer"');
      expect(unknown.message).toContain("raw/customers");
      expect(outside).toMatchObject({ code: "LINEAGE_PARTITION_INVALID" });
      expect(outside.message).toContain('asset "raw/customers": partition "2024-12-31"');
    }
    // Checked before anything is opened or asked.
    const depths = await Promise.all(
      ["0", "99999999999999999999", "deep"].map((d) => failure("server", "raw/customers", "--partition", "2025-01-02", "--depth", d)),
    );
    for (const [i, d] of ["0", "99999999999999999999", "deep"].entries()) {
      expect(depths[i]).toMatchObject({ code: "LINEAGE_DEPTH_INVALID", message: `--depth: "${d}" must be a whole number from 1 to 20` });
    }
    const both = await failure("in-process", "raw/customers", "--upstream", "--downstream");
    expect(both).toMatchObject({ code: "INPUT_INVALID", message: expect.stringContaining("--downstream") });
    expect(await rowCounts()).toBe(before);
  }, 120_000);

  it("serves erasureImpact over GraphQL and launches its selection as a backfill", async () => {
    const port = Number(new URL(server.url).port);
    const impact = await graphqlAt<{
      erasureImpact: { backfill: { assetKeys: string[]; assetPartitions: { assetKey: string; partitionKeys: string[] }[] } };
    }>(
      port,
      `{ erasureImpact(assetKey: "raw/customers", partitionKeys: ["2025-01-02"]) { backfill { assetKeys assetPartitions { assetKey partitionKeys } } } }`,
    );
    expect(impact.errors, JSON.stringify(impact.errors)).toBeUndefined();
    const selection = impact.data!.erasureImpact.backfill;
    expect(selection.assetPartitions.flatMap((g) => g.partitionKeys)).toHaveLength(7);
    const launched = await graphqlAt<{ launchBackfill: { id: string; requested: number; assetKeys: string[] } }>(
      port,
      `mutation ($input: LaunchBackfillInput!) { launchBackfill(input: $input) { id requested assetKeys } }`,
      { input: { ...selection, maxPartitionsPerRun: 10 } },
    );
    expect(launched.errors, JSON.stringify(launched.errors)).toBeUndefined();
    expect(launched.data!.launchBackfill).toMatchObject({ requested: 7, assetKeys: selection.assetKeys });

    // Errors keep their codes through the server, and none writes.
    const before = await rowCounts();
    const bad = async (query: string, variables: Record<string, unknown> = {}) => (await graphqlAt(port, query, variables)).errors?.[0];
    expect(await bad(`{ erasureImpact(assetKey: "raw/customers", partitionKeys: ["nope"]) { assetKey } }`)).toMatchObject({
      extensions: { code: "ERASURE_PARTITION_INVALID" },
      message: expect.stringContaining('"nope"'),
    });
    expect(await bad(`{ erasureImpact(assetKey: "raw/customers", partitionKeys: []) { assetKey } }`)).toMatchObject({
      extensions: { code: "ERASURE_PARTITIONS_REQUIRED" },
    });
    expect(await bad(`{ lineage(assetKey: "raw/customers", partitionKey: "2025-01-02", depth: 50) { assetKey } }`)).toMatchObject({
      extensions: { code: "LINEAGE_DEPTH_INVALID" },
    });
    expect(await bad(`{ lineage(assetKey: "x'; drop table events; --") { assetKey } }`)).toMatchObject({
      extensions: { code: "GRAPH_UNKNOWN_ASSET" },
      message: expect.stringContaining("drop table events"),
    });
    const mutation = `mutation ($input: LaunchBackfillInput!) { launchBackfill(input: $input) { id } }`;
    expect(
      await bad(mutation, {
        input: {
          assetKeys: ["mart/enriched"],
          from: "2025-01-02",
          assetPartitions: [{ assetKey: "mart/enriched", partitionKeys: ["2025-01-02"] }],
        },
      }),
    ).toMatchObject({ extensions: { code: "INPUT_INVALID" }, message: expect.stringContaining("assetPartitions") });
    expect(
      await bad(mutation, {
        input: { assetKeys: ["mart/enriched"], assetPartitions: [{ assetKey: "mart/enriched", partitionKeys: ["someday"] }] },
      }),
    ).toMatchObject({
      extensions: { code: "PARTITION_KEY_INVALID" },
      message: expect.stringContaining('"mart/enriched"'),
    });
    expect(await rowCounts()).toBe(before);
  }, 60_000);
});
