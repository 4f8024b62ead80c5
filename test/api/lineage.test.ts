import { sql, type Kysely, type KyselyPlugin } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiApp, erasureImpact, launchBackfill, lineage, type ApiServices, type LineageServices } from "../../src/api/index.js";
import { TributaryError } from "../../src/errors/index.js";
import { PgBackfillStore, PgLineageStore, type Database, type LineageEvent } from "../../src/storage/index.js";
import type { Harness } from "../execution/harness.js";
import { describePostgres } from "../support/pg.js";
import { apiServicesOn } from "../support/api-services.js";
import { LINEAGE_DEFS, materialisedLineageGraph } from "./lineage-graph.js";

const at = (e: Pick<LineageEvent, "assetKey" | "partitionKey">) => `${e.assetKey}@${e.partitionKey}`;

/** Rejects with a TributaryError of this code whose message names every fragment. */
async function expectError(promise: Promise<unknown>, code: string, ...fragments: string[]): Promise<TributaryError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, `expected ${code}`).toBeInstanceOf(TributaryError);
  const e = err as TributaryError;
  expect(e.code, e.message).toBe(code);
  for (const f of fragments) expect(e.message).toContain(f);
  return e;
}

describePostgres("lineage and erasure impact on a materialised 5-level graph", () => {
  let h: Harness;
  let statements = 0;
  let counted: Kysely<Database>;
  const services = (limits?: LineageServices["limits"]): LineageServices => ({
    graphs: h.graphs,
    definitions: h.definitions,
    lineage: new PgLineageStore(counted),
    ...(limits ? { limits } : {}),
  });
  const rowCounts = async () =>
    (
      await sql<{ n: string }>`
        select (select count(*) from events) || '/' || (select count(*) from event_inputs) || '/' || (select count(*) from runs) || '/' ||
               (select count(*) from backfills) || '/' || (select count(*) from outputs) as n`.execute(h.db)
    ).rows[0]!.n;
  const eventOf = async (assetKey: string, partitionKey: string) =>
    Number(
      (
        await sql<{ id: string }>`
          select id from events where asset_key = ${assetKey} and partition_key = ${partitionKey} and kind = 'materialization'
          order by id desc limit 1`.execute(h.db)
      ).rows[0]!.id,
    );

  beforeAll(async () => {
    h = await materialisedLineageGraph();
    const counter: KyselyPlugin = {
      transformQuery: (args) => {
        statements++;
        return args.node;
      },
      transformResult: async (args) => args.result,
    };
    counted = h.db.withPlugin(counter);
  }, 120_000);

  afterAll(() => h?.stop());

  describe("lineage", () => {
    it("walks upstream from the summary's latest materialisation: the asset graph and which materialisation read which", async () => {
      const l = await lineage(services(), { assetKey: "reports/summary", partitionKey: "2025-01-04", direction: "upstream", depth: 4 });
      // Static: nine assets, the summary first, with levels, partitions and PII.
      expect(l.assets.map((a) => `${a.depth}:${a.key}`)).toEqual([
        "0:reports/summary",
        "1:mart/daily_report",
        "1:mart/rolling3d",
        "2:mart/enriched",
        "3:clean/customers",
        "3:clean/orders",
        "4:raw/customers",
        "4:raw/orders",
        "4:ref/countries",
      ]);
      expect(l.assets.find((a) => a.key === "raw/customers")).toMatchObject({
        pii: ["email", "name"],
        partitions: expect.stringContaining("daily"),
      });
      expect(l.assets.find((a) => a.key === "ref/countries")).toMatchObject({ pii: null, partitions: null });
      expect(l.assets.find((a) => a.key === "mart/enriched")!.pii).toBe(true);
      expect(l.dependencies).toHaveLength(9);
      expect(l.dependencies.find((d) => d.downstreamKey === "mart/rolling3d")).toMatchObject({
        upstreamKey: "mart/enriched",
        name: "e",
        mapping: { kind: "timeWindow", startOffset: -2 },
        mappingDescription: expect.stringContaining("-2"),
      });

      // Run-level: 1 + 2 + 3 + 6 + 7 materialisations, each with its run, step, data version and time.
      expect(l.start).toMatchObject({ assetKey: "reports/summary", partitionKey: "2025-01-04", kind: "materialization", depth: 0 });
      expect(l.materializations[0]).toEqual(l.start);
      const byDepth = (d: number) =>
        l.materializations
          .filter((e) => e.depth === d)
          .map(at)
          .sort();
      expect(byDepth(1)).toEqual(["mart/daily_report@2025-01-04", "mart/rolling3d@2025-01-04"]);
      expect(byDepth(2)).toEqual(["mart/enriched@2025-01-02", "mart/enriched@2025-01-03", "mart/enriched@2025-01-04"]);
      expect(byDepth(3)).toHaveLength(6);
      expect(byDepth(4)).toEqual([
        "raw/customers@2025-01-02",
        "raw/customers@2025-01-03",
        "raw/customers@2025-01-04",
        "raw/orders@2025-01-02",
        "raw/orders@2025-01-03",
        "raw/orders@2025-01-04",
        "ref/countries@",
      ]);
      for (const e of l.materializations) {
        expect(e.runId).toMatch(/^[0-9a-f-]{36}$/);
        expect(e.stepId).toBeGreaterThan(0);
        expect(e.tryNumber).toBe(1);
        expect(e.dataVersion).toBeTruthy();
        expect(e.createdAt).toBeInstanceOf(Date);
      }
      // The summary and the window were written by the second run, everything else by the first.
      const runOf = (key: string) => l.materializations.find((e) => at(e) === key)!.runId;
      expect(runOf("mart/rolling3d@2025-01-04")).toBe(l.start!.runId);
      expect(runOf("mart/enriched@2025-01-04")).not.toBe(l.start!.runId);

      // Edges: 2 + 4 + 6 + 9; the window read three days of enriched, each by its event.
      expect(l.inputs).toHaveLength(21);
      const ids = new Map(l.materializations.map((e) => [e.eventId, at(e)]));
      const rolling = l.materializations.find((e) => at(e) === "mart/rolling3d@2025-01-04")!;
      expect(l.inputs.filter((i) => i.eventId === rolling.eventId).map((i) => ids.get(i.upstreamEventId!))).toEqual([
        "mart/enriched@2025-01-02",
        "mart/enriched@2025-01-03",
        "mart/enriched@2025-01-04",
      ]);
      // Every edge joins two events of the answer.
      for (const i of l.inputs) {
        expect(ids.has(i.eventId)).toBe(true);
        expect(ids.get(i.upstreamEventId!)).toBe(`${i.upstreamAssetKey}@${i.upstreamPartitionKey}`);
      }
    });

    it("stops at the depth asked for (default 3), in both graphs", async () => {
      const two = await lineage(services(), { assetKey: "reports/summary", partitionKey: "2025-01-04", depth: 2 });
      expect(two.direction).toBe("upstream");
      expect(two.assets.map((a) => a.key)).toEqual(["reports/summary", "mart/daily_report", "mart/rolling3d", "mart/enriched"]);
      expect(two.dependencies).toHaveLength(4);
      expect(two.materializations).toHaveLength(6);
      expect(two.inputs).toHaveLength(6);
      const three = await lineage(services(), { assetKey: "reports/summary", partitionKey: "2025-01-04" });
      expect(three.depth).toBe(3);
      expect(Math.max(...three.materializations.map((e) => e.depth))).toBe(3);
      expect(three.materializations).toHaveLength(12);
    });

    it("walks downstream from a source partition: who read it, and who read those", async () => {
      const l = await lineage(services(), { assetKey: "raw/customers", partitionKey: "2025-01-02", direction: "downstream", depth: 3 });
      expect(l.assets.map((a) => `${a.depth}:${a.key}`)).toEqual([
        "0:raw/customers",
        "1:clean/customers",
        "2:mart/enriched",
        "3:mart/daily_report",
        "3:mart/rolling3d",
      ]);
      expect(l.materializations.map((e) => `${e.depth}:${at(e)}`).sort()).toEqual([
        "0:raw/customers@2025-01-02",
        "1:clean/customers@2025-01-02",
        "2:mart/enriched@2025-01-02",
        "3:mart/daily_report@2025-01-02",
        "3:mart/rolling3d@2025-01-03",
        "3:mart/rolling3d@2025-01-04",
      ]);
      expect(l.inputs).toHaveLength(5);
      const deeper = await lineage(services(), {
        assetKey: "raw/customers",
        partitionKey: "2025-01-02",
        direction: "downstream",
        depth: 20,
      });
      expect(
        deeper.materializations
          .filter((e) => e.assetKey === "reports/summary")
          .map((e) => e.partitionKey)
          .sort(),
      ).toEqual(["2025-01-03", "2025-01-04"]);
    });

    it("gives the static graph only for a partitioned asset asked about without a partition, and an empty run graph for a missing partition", async () => {
      const l = await lineage(services(), { assetKey: "mart/enriched", direction: "downstream", depth: 1 });
      expect(l.partitionKey).toBeNull();
      expect(l.assets.map((a) => a.key)).toEqual(["mart/enriched", "mart/daily_report", "mart/rolling3d"]);
      expect(l.start).toBeNull();
      expect(l.materializations).toEqual([]);
      const missing = await lineage(services(), { assetKey: "reports/summary", partitionKey: "2025-01-01" });
      expect(missing.partitionKey).toBe("2025-01-01");
      expect(missing.start).toBeNull();
      expect(missing.assets).toHaveLength(6);
      const unpartitioned = await lineage(services(), { assetKey: "ref/countries", direction: "downstream", depth: 1 });
      expect(unpartitioned.partitionKey).toBe("");
      expect(unpartitioned.materializations.map(at).sort()).toEqual([
        "clean/customers@2025-01-01",
        "clean/customers@2025-01-02",
        "clean/customers@2025-01-03",
        "clean/customers@2025-01-04",
        "clean/customers@2025-01-05",
        "clean/customers@2025-01-06",
        "ref/countries@",
      ]);
    });

    it("costs two statements whatever the depth and size", async () => {
      statements = 0;
      await lineage(services(), { assetKey: "reports/summary", partitionKey: "2025-01-04", depth: 1 });
      expect(statements).toBe(2);
      statements = 0;
      await lineage(services(), { assetKey: "reports/summary", partitionKey: "2025-01-04", depth: 20 });
      expect(statements).toBe(2);
      statements = 0;
      await lineage(services(), { assetKey: "ref/countries", direction: "downstream", depth: 20 });
      expect(statements).toBe(2);
    });

    it("refuses bad input with named errors and writes nothing", async () => {
      const before = await rowCounts();
      await expectError(lineage(services(), { assetKey: "raw/customer" }), "GRAPH_UNKNOWN_ASSET", '"raw/customer"', "raw/customers");
      await expectError(
        lineage(services(), { assetKey: "raw/customers", partitionKey: "2024-12-31" }),
        "LINEAGE_PARTITION_INVALID",
        '"raw/customers"',
        '"2024-12-31"',
      );
      await expectError(
        lineage(services(), { assetKey: "raw/customers", partitionKey: "yesterday" }),
        "LINEAGE_PARTITION_INVALID",
        '"yesterday"',
      );
      await expectError(
        lineage(services(), { assetKey: "ref/countries", partitionKey: "2025-01-01" }),
        "LINEAGE_PARTITION_INVALID",
        "not partitioned",
      );
      await expectError(
        lineage(services(), { assetKey: "'; drop table events; --", partitionKey: "x" }),
        "GRAPH_UNKNOWN_ASSET",
        "drop table events",
      );
      for (const depth of [0, -1, 21, 1e9, 2.5, Number.NaN]) {
        await expectError(
          lineage(services(), { assetKey: "raw/customers", partitionKey: "2025-01-01", depth }),
          "LINEAGE_DEPTH_INVALID",
          "depth",
          "1 to 20",
        );
      }
      expect(await rowCounts()).toBe(before);
    });

    it("refuses an answer over the node cap with a clear error", async () => {
      await expectError(
        lineage(services({ maxNodes: 5 }), { assetKey: "reports/summary", partitionKey: "2025-01-04", depth: 4 }),
        "LINEAGE_TOO_LARGE",
        "more than 5",
        "smaller depth",
      );
      // The static graph alone (no partition) is capped too.
      await expectError(
        lineage(services({ maxNodes: 3 }), { assetKey: "reports/summary", depth: 4 }),
        "LINEAGE_TOO_LARGE",
        '"reports/summary"',
      );
      // Under the cap, the same question is answered.
      expect(
        (await lineage(services({ maxNodes: 30 }), { assetKey: "reports/summary", partitionKey: "2025-01-04", depth: 4 })).materializations,
      ).toHaveLength(19);
    });
  });

  describe("erasureImpact", () => {
    it("lists every derived partition of a customer partition, what wrote it, where it is stored, and the PII assets", async () => {
      statements = 0;
      const impact = await erasureImpact(services(), { assetKey: "raw/customers", partitionKeys: ["2025-01-02"] });
      // One query, after the settings (local to its transaction) that make its joins follow indexes.
      expect(statements).toBe(2);
      expect(impact.sources).toHaveLength(1);
      expect(impact.sources[0]).toMatchObject({
        assetKey: "raw/customers",
        partitionKey: "2025-01-02",
        eventId: await eventOf("raw/customers", "2025-01-02"),
        eventKind: "materialization",
        runStatus: "success",
        output: { inline: true, storageRef: null },
      });
      expect(impact.partitions.map(at)).toEqual([
        "clean/customers@2025-01-02",
        "mart/enriched@2025-01-02",
        "mart/daily_report@2025-01-02",
        "mart/rolling3d@2025-01-03",
        "mart/rolling3d@2025-01-04",
        "reports/summary@2025-01-03",
        "reports/summary@2025-01-04",
      ]);
      for (const p of impact.partitions) {
        expect(p.eventId).toBe(await eventOf(p.assetKey, p.partitionKey));
        expect(p).toMatchObject({ eventKind: "materialization", runStatus: "success", tryNumber: 1 });
        expect(p.runId).toMatch(/^[0-9a-f-]{36}$/);
        expect(p.stepId).toBeGreaterThan(0);
        expect(p.materializedAt).toBeInstanceOf(Date);
      }
      // The summary's output was too large for the database: it is in the output store.
      const summary = impact.partitions.find((p) => p.assetKey === "reports/summary")!;
      expect(summary.output).toMatchObject({ inline: false, storageRef: expect.stringMatching(/^file:\/\//) });
      expect(summary.output!.sizeBytes).toBeGreaterThan(60 * 1024);
      expect(impact.partitions.find((p) => p.assetKey === "mart/enriched")!.output).toMatchObject({ inline: true, storageRef: null });

      expect(impact.assets).toEqual([
        { assetKey: "raw/customers", pii: ["email", "name"], defined: true, partitionCount: 1 },
        { assetKey: "clean/customers", pii: ["email"], defined: true, partitionCount: 1 },
        { assetKey: "mart/enriched", pii: true, defined: true, partitionCount: 1 },
        { assetKey: "mart/daily_report", pii: null, defined: true, partitionCount: 1 },
        { assetKey: "mart/rolling3d", pii: null, defined: true, partitionCount: 2 },
        { assetKey: "reports/summary", pii: null, defined: true, partitionCount: 2 },
      ]);
      expect(impact.backfill).toEqual({
        assetKeys: ["clean/customers", "mart/enriched", "mart/daily_report", "mart/rolling3d", "reports/summary"],
        assetPartitions: [
          { assetKey: "clean/customers", partitionKeys: ["2025-01-02"] },
          { assetKey: "mart/enriched", partitionKeys: ["2025-01-02"] },
          { assetKey: "mart/daily_report", partitionKeys: ["2025-01-02"] },
          { assetKey: "mart/rolling3d", partitionKeys: ["2025-01-03", "2025-01-04"] },
          { assetKey: "reports/summary", partitionKeys: ["2025-01-03", "2025-01-04"] },
        ],
      });
    });

    it("follows the partitions' latest materialisations by key: re-materialising the source alone leaves the derived data impacted", async () => {
      const old = await eventOf("raw/customers", "2025-01-05");
      const run = await h.waitForRun(await h.launch(["raw/customers"], { partition: "2025-01-05" }), 30_000);
      expect(run.status).toBe("success");
      const impact = await erasureImpact(services(), { assetKey: "raw/customers", partitionKeys: ["2025-01-05"] });
      expect(impact.sources[0]!.eventId).toBe(await eventOf("raw/customers", "2025-01-05"));
      expect(impact.sources[0]!.eventId).not.toBe(old);
      expect(impact.partitions.map(at)).toEqual([
        "clean/customers@2025-01-05",
        "mart/enriched@2025-01-05",
        "mart/daily_report@2025-01-05",
        "mart/rolling3d@2025-01-05",
        "mart/rolling3d@2025-01-06",
        "reports/summary@2025-01-05",
        "reports/summary@2025-01-06",
      ]);
      // Run-level lineage still shows which version clean/customers read: the old one.
      const l = await lineage(services(), { assetKey: "clean/customers", partitionKey: "2025-01-05", depth: 1 });
      expect(l.inputs.find((i) => i.upstreamAssetKey === "raw/customers")!.upstreamEventId).toBe(old);
    });

    it("takes several source partitions and unpartitioned sources, in one query", async () => {
      statements = 0;
      const both = await erasureImpact(services(), {
        assetKey: "raw/customers",
        partitionKeys: ["2025-01-02", "2025-01-03", "2025-01-02"],
      });
      expect(statements).toBe(2);
      expect(both.sources.map(at)).toEqual(["raw/customers@2025-01-02", "raw/customers@2025-01-03"]);
      expect(both.partitions.filter((p) => p.assetKey === "mart/rolling3d").map((p) => p.partitionKey)).toEqual([
        "2025-01-03",
        "2025-01-04",
        "2025-01-05",
      ]);
      const countries = await erasureImpact(services(), { assetKey: "ref/countries", partitionKeys: [] });
      expect(countries.sources.map(at)).toEqual(["ref/countries@"]);
      expect(countries.assets.map((a) => `${a.assetKey}:${a.partitionCount}`)).toEqual([
        "ref/countries:1",
        "clean/customers:6",
        "mart/enriched:6",
        "mart/daily_report:6",
        "mart/rolling3d:4",
        "reports/summary:4",
      ]);
      // A partition nothing read yet has no derived data.
      const lonely = await erasureImpact(services(), { assetKey: "reports/summary", partitionKeys: ["2025-01-03"] });
      expect(lonely.partitions).toEqual([]);
      expect(lonely.backfill).toEqual({ assetKeys: [], assetPartitions: [] });
    });

    it("hands launchBackfill a selection it accepts, re-materialising exactly the impact", async () => {
      const impact = await erasureImpact(services(), { assetKey: "raw/customers", partitionKeys: ["2025-01-02"] });
      const backfillServices = { graphs: h.graphs, runs: h.runs, definitions: h.definitions, backfills: new PgBackfillStore(h.db) };
      const record = await launchBackfill(backfillServices, { ...impact.backfill, maxPartitionsPerRun: 10 }, new Date());
      expect(record.requested).toBe(7);
      expect(record.selection.assetKeys).toEqual(impact.backfill.assetKeys);
      const layout = JSON.stringify(record.partitions);
      for (const key of impact.backfill.assetKeys) expect(layout).toContain(key);

      const before = await rowCounts();
      const bad = (assetPartitions: { assetKey: string; partitionKeys: string[] }[], assetKeys = assetPartitions.map((g) => g.assetKey)) =>
        launchBackfill(backfillServices, { assetKeys, assetPartitions }, new Date());
      await expectError(
        bad([{ assetKey: "mart/enriched", partitionKeys: ["2025-01-02"] }], ["mart/enriched", "reports/summary"]),
        "INPUT_INVALID",
        '"reports/summary"',
      );
      await expectError(
        bad([{ assetKey: "mart/enriched", partitionKeys: ["2025-01-02"] }], ["reports/summary"]),
        "INPUT_INVALID",
        '"mart/enriched"',
        "assetKeys",
      );
      await expectError(
        bad([{ assetKey: "mart/enriched", partitionKeys: ["1999-01-01"] }]),
        "PARTITION_KEY_INVALID",
        '"mart/enriched"',
        "1999-01-01",
      );
      await expectError(
        bad([{ assetKey: "ref/countries", partitionKeys: ["2025-01-02"] }]),
        "PARTITION_SELECTION_INVALID",
        '"ref/countries"',
        "not partitioned",
      );
      await expectError(bad([{ assetKey: "mart/enriched", partitionKeys: [] }]), "PARTITION_SELECTION_EMPTY", '"mart/enriched"');
      await expectError(
        launchBackfill(
          backfillServices,
          {
            assetKeys: ["mart/enriched"],
            from: "2025-01-02",
            assetPartitions: [{ assetKey: "mart/enriched", partitionKeys: ["2025-01-02"] }],
          },
          new Date(),
        ),
        "INPUT_INVALID",
        "assetPartitions",
      );
      expect(await rowCounts()).toBe(before);
    });

    it("refuses bad input with named errors and writes nothing", async () => {
      const before = await rowCounts();
      await expectError(
        erasureImpact(services(), { assetKey: "raw/custmers", partitionKeys: ["2025-01-02"] }),
        "GRAPH_UNKNOWN_ASSET",
        '"raw/custmers"',
        "raw/customers",
      );
      await expectError(
        erasureImpact(services(), { assetKey: "raw/customers", partitionKeys: [] }),
        "ERASURE_PARTITIONS_REQUIRED",
        '"raw/customers"',
      );
      await expectError(
        erasureImpact(services(), { assetKey: "raw/customers", partitionKeys: ["2025-01-02", "customer-42"] }),
        "ERASURE_PARTITION_INVALID",
        '"raw/customers"',
        '"customer-42"',
      );
      await expectError(
        erasureImpact(services(), { assetKey: "ref/countries", partitionKeys: ["x"] }),
        "ERASURE_PARTITION_INVALID",
        "not partitioned",
      );
      await expectError(
        erasureImpact(services(), { assetKey: "raw/customers", partitionKeys: ["2025-01-02'); delete from events; --"] }),
        "ERASURE_PARTITION_INVALID",
        "delete from events",
      );
      const many = Array.from({ length: 10_001 }, (_, i) => `k${i}`);
      await expectError(
        erasureImpact(services(), { assetKey: "raw/customers", partitionKeys: many }),
        "ERASURE_TOO_MANY_PARTITIONS",
        "10001",
        "10000",
      );
      await expectError(
        erasureImpact(services({ maxImpact: 3 }), { assetKey: "raw/customers", partitionKeys: ["2025-01-02"] }),
        "ERASURE_IMPACT_TOO_LARGE",
        "more than 3",
        '"raw/customers"',
      );
      expect(await rowCounts()).toBe(before);
    });
  });

  describe("GraphQL", () => {
    const request = async <T>(context: ApiServices, query: string, variables: Record<string, unknown>) => {
      const app = createApiApp({ context, ping: async () => {}, version: "test" });
      const res = await app.request("/graphql", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query, variables }),
      });
      const body = (await res.json()) as { data?: T; errors?: unknown[] };
      expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
      return body.data!;
    };
    // The lineage queries read what services() reads: the harness's graph and definitions, lineage on the counted handle.
    const context = () => apiServicesOn(counted, { graphs: h.graphs, definitions: h.definitions });

    it("answers lineage and erasureImpact with the same graph as the functions", async () => {
      const data = await request<{
        lineage: {
          direction: string;
          assets: { key: string }[];
          start: { eventId: string };
          materializations: unknown[];
          inputs: { upstreamEventId: string | null }[];
        };
      }>(
        context(),
        `query ($key: String!, $p: String) {
          lineage(assetKey: $key, partitionKey: $p, direction: DOWNSTREAM, depth: 2) {
            direction assets { key depth pii } dependencies { upstreamKey downstreamKey mapping mappingDescription }
            start { eventId runId stepId dataVersion createdAt } materializations { eventId assetKey partitionKey depth } inputs { eventId upstreamEventId }
          }
        }`,
        { key: "raw/customers", p: "2025-01-02" },
      );
      expect(data.lineage.direction).toBe("DOWNSTREAM");
      expect(data.lineage.assets.map((a) => a.key)).toEqual(["raw/customers", "clean/customers", "mart/enriched"]);
      expect(data.lineage.start.eventId).toBe(String(await eventOf("raw/customers", "2025-01-02")));
      expect(data.lineage.materializations).toHaveLength(3);
      expect(data.lineage.inputs.every((i) => typeof i.upstreamEventId === "string")).toBe(true);

      const impact = await request<{
        erasureImpact: {
          partitions: { assetKey: string; output: { storageRef: string | null } | null }[];
          assets: { assetKey: string; hasPii: boolean }[];
          backfill: { assetKeys: string[] };
        };
      }>(
        context(),
        `query ($key: String!, $keys: [String!]!) {
          erasureImpact(assetKey: $key, partitionKeys: $keys) {
            sources { assetKey partitionKey eventId }
            partitions { assetKey partitionKey eventId eventKind runId runStatus stepId tryNumber dataVersion materializedAt output { storageRef inline sizeBytes } }
            assets { assetKey pii hasPii defined partitionCount }
            backfill { assetKeys assetPartitions { assetKey partitionKeys } }
          }
        }`,
        { key: "raw/customers", keys: ["2025-01-02"] },
      );
      expect(impact.erasureImpact.partitions).toHaveLength(7);
      expect(impact.erasureImpact.assets.filter((a) => a.hasPii).map((a) => a.assetKey)).toEqual([
        "raw/customers",
        "clean/customers",
        "mart/enriched",
      ]);
      expect(impact.erasureImpact.partitions.filter((p) => p.output?.storageRef).map((p) => p.assetKey)).toEqual([
        "reports/summary",
        "reports/summary",
      ]);
      expect(impact.erasureImpact.backfill.assetKeys).toHaveLength(5);
    });
  });

  describe("after an asset left the definitions", () => {
    it("still lists its stored partitions, marked not defined, and leaves them out of the backfill", async () => {
      const summaryAt = LINEAGE_DEFS.indexOf("export const summary");
      await h.redefine({ "lineage.ts": LINEAGE_DEFS.slice(0, summaryAt) });
      const impact = await erasureImpact(services(), { assetKey: "raw/customers", partitionKeys: ["2025-01-02"] });
      expect(impact.partitions.map(at).slice(-2)).toEqual(["reports/summary@2025-01-03", "reports/summary@2025-01-04"]);
      expect(impact.assets.at(-1)).toEqual({ assetKey: "reports/summary", pii: null, defined: false, partitionCount: 2 });
      expect(impact.backfill.assetKeys).not.toContain("reports/summary");
      await expectError(
        lineage(services(), { assetKey: "reports/summary", partitionKey: "2025-01-04" }),
        "GRAPH_UNKNOWN_ASSET",
        '"reports/summary"',
      );
    });
  });
});
