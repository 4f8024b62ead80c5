import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { commandStore, describePostgres, type CommandStore } from "../support/pg.js";
import { eventually, freePort, startCli } from "./run-cli.js";

// Asset.partitionStatus and the status of listed partitions through a real `tributary dev` server.
const defs = (downVersion: string) => `
import { asset, daily } from "tributary";
const days = daily({ start: "2025-01-01", end: "2025-01-11" });
export const up = asset({ key: "ps/up", partitions: days, codeVersion: "u1" }, async (ctx) => ({ day: ctx.partition.key }));
export const down = asset({ key: "ps/down", partitions: days, deps: { up }, codeVersion: ${JSON.stringify(downVersion)} },
  async (_ctx, { up }) => ({ from: up }));
export const gappy = asset({ key: "ps/gappy", partitions: days, deps: { up }, retries: 0 }, async (ctx, { up }) => {
  if (ctx.partition.key === "2025-01-05") throw new Error("no data on the 5th");
  return up;
});
`;

type GraphQLResult<T> = { data?: T; errors?: { message: string; extensions?: { code?: string } }[] };
type Counts = { missing: number; materializing: number; materialized: number; failed: number; stale: number; total: number };
type Range = { status: string; from: string; to: string; count: number };
type Node = { key: string; status: string; staleReasons: { kind: string; message: string; upstreamAssetKey: string | null }[] };
type AssetStatus = {
  asset: { codeVersion: string | null; partitionStatus: { counts: Counts; ranges: Range[] }; partitions: { nodes: Node[] } };
};

let store: CommandStore | undefined;
let defsDir: string;
let port: number;
let dev: ReturnType<typeof startCli>;

async function gql<T>(query: string, variables: Record<string, unknown> = {}): Promise<GraphQLResult<T>> {
  const res = await fetch(`http://127.0.0.1:${port}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ query, variables }),
  });
  return (await res.json()) as GraphQLResult<T>;
}

/** Launches a run through the API and waits for it to end; returns its status. */
async function materialize(input: Record<string, unknown>): Promise<string> {
  const launched = await gql<{ launchRun: { id: string } }>(`mutation ($input: LaunchRunInput!) { launchRun(input: $input) { id } }`, {
    input,
  });
  expect(launched.errors, JSON.stringify(launched.errors)).toBeUndefined();
  const id = launched.data!.launchRun.id;
  return eventually(
    async () => {
      const r = await gql<{ run: { status: string } }>(`query ($id: String!) { run(id: $id) { status } }`, { id });
      const status = r.data?.run.status;
      return status === "success" || status === "failed" || status === "canceled" ? status : undefined;
    },
    60_000,
    () => `run ${id} to end\n${dev.output()}`,
  );
}

const STATUS = `query ($key: String!) {
  asset(key: $key) {
    codeVersion
    partitionStatus { counts { missing materializing materialized failed stale total } ranges { status from to count } }
    partitions(first: 20) { nodes { key status staleReasons { kind message upstreamAssetKey } } }
  }
}`;

async function statusOf(key: string): Promise<AssetStatus["asset"]> {
  const r = await gql<AssetStatus>(STATUS, { key });
  expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
  return r.data!.asset;
}

const nodeOf = (a: AssetStatus["asset"], key: string) => a.partitions.nodes.find((n) => n.key === key)!;

describePostgres("GraphQL partition status (tributary dev)", () => {
  beforeAll(async () => {
    // A migrated database to start from: what the tests are about comes after a first start.
    store = await commandStore("tributary-ps-data-");
    defsDir = await mkdtemp(path.join(tmpdir(), "tributary-ps-defs-"));
    await writeFile(path.join(defsDir, "ps.ts"), defs("d1"));
    port = freePort();
    dev = startCli(["dev", "--port", String(port), "--data-dir", store.dataDir, "--definitions", defsDir, "--processes", "1"], {
      env: store.env,
    });
    await eventually(
      async () => {
        const r = await gql<{ assets: unknown[] }>("{ assets { key } }");
        return r.data?.assets.length ? true : undefined;
      },
      90_000,
      () => `dev to start\n${dev.output()}`,
    );
  }, 120_000);

  afterAll(async () => {
    if (dev && dev.exitCode === null) {
      dev.kill("SIGTERM");
      await new Promise((resolve) => dev.once("exit", resolve));
    }
    await store?.remove();
    await rm(defsDir, { recursive: true, force: true });
  });

  it("a new asset is all missing, as counts and as one range", async () => {
    const a = await statusOf("ps/down");
    expect(a.partitionStatus.counts).toEqual({ missing: 10, materializing: 0, materialized: 0, failed: 0, stale: 0, total: 10 });
    expect(a.partitionStatus.ranges).toEqual([{ status: "MISSING", from: "2025-01-01", to: "2025-01-10", count: 10 }]);
    expect(a.partitions.nodes.map((n) => n.status)).toEqual(Array(10).fill("MISSING"));
  });

  it("upstream materialised again and an external event make readers STALE with reasons; a rerun makes them fresh", async () => {
    expect(await materialize({ assetKeys: ["ps/up", "ps/down"], from: "2025-01-01", to: "2025-01-03" })).toBe("success");
    let a = await statusOf("ps/down");
    expect(a.partitionStatus.counts).toMatchObject({ materialized: 3, missing: 7, stale: 0 });

    expect(await materialize({ assetKeys: ["ps/up"], partition: "2025-01-02" })).toBe("success");
    const reported = await gql<{ reportAssetEvent: { eventId: string } }>(
      `mutation { reportAssetEvent(input: { assetKey: "ps/up", partition: "2025-01-03" }) { eventId } }`,
    );
    expect(reported.errors).toBeUndefined();

    a = await statusOf("ps/down");
    expect(a.partitionStatus.counts).toEqual({ missing: 7, materializing: 0, materialized: 1, failed: 0, stale: 2, total: 10 });
    expect(a.partitionStatus.ranges).toEqual([
      { status: "MATERIALIZED", from: "2025-01-01", to: "2025-01-01", count: 1 },
      { status: "STALE", from: "2025-01-02", to: "2025-01-03", count: 2 },
      { status: "MISSING", from: "2025-01-04", to: "2025-01-10", count: 7 },
    ]);
    for (const day of ["2025-01-02", "2025-01-03"]) {
      const n = nodeOf(a, day);
      expect(n.status).toBe("STALE");
      expect(n.staleReasons).toHaveLength(1);
      expect(n.staleReasons[0]).toMatchObject({ kind: "UPSTREAM_UPDATED", upstreamAssetKey: "ps/up" });
      expect(n.staleReasons[0]!.message).toMatch(new RegExp(`upstream "ps/up" partition "${day}" was materialised again`));
    }
    expect(nodeOf(a, "2025-01-01")).toMatchObject({ status: "MATERIALIZED", staleReasons: [] });

    expect(await materialize({ assetKeys: ["ps/down"], from: "2025-01-02", to: "2025-01-03" })).toBe("success");
    a = await statusOf("ps/down");
    expect(a.partitionStatus.counts).toMatchObject({ materialized: 3, stale: 0 });
    expect(a.partitionStatus.ranges[0]).toEqual({ status: "MATERIALIZED", from: "2025-01-01", to: "2025-01-03", count: 3 });
  });

  it("counts and ranges of an asset with gaps and a failed partition", async () => {
    expect(await materialize({ assetKeys: ["ps/up"], from: "2025-01-04", to: "2025-01-08" })).toBe("success");
    expect(await materialize({ assetKeys: ["ps/gappy"], from: "2025-01-01", to: "2025-01-02" })).toBe("success");
    expect(await materialize({ assetKeys: ["ps/gappy"], partition: "2025-01-05" })).toBe("failed");
    expect(await materialize({ assetKeys: ["ps/gappy"], from: "2025-01-07", to: "2025-01-08" })).toBe("success");
    const a = await statusOf("ps/gappy");
    expect(a.partitionStatus.ranges).toEqual([
      { status: "MATERIALIZED", from: "2025-01-01", to: "2025-01-02", count: 2 },
      { status: "MISSING", from: "2025-01-03", to: "2025-01-04", count: 2 },
      { status: "FAILED", from: "2025-01-05", to: "2025-01-05", count: 1 },
      { status: "MISSING", from: "2025-01-06", to: "2025-01-06", count: 1 },
      { status: "MATERIALIZED", from: "2025-01-07", to: "2025-01-08", count: 2 },
      { status: "MISSING", from: "2025-01-09", to: "2025-01-10", count: 2 },
    ]);
    expect(a.partitionStatus.counts).toEqual({ missing: 5, materializing: 0, materialized: 4, failed: 1, stale: 0, total: 10 });
    expect(a.partitions.nodes.map((n) => n.status).join(" ")).toBe(
      "MATERIALIZED MATERIALIZED MISSING MISSING FAILED MISSING MATERIALIZED MATERIALIZED MISSING MISSING",
    );
    // Counts alone (the batched aggregate) for every asset at once agree with the ranges.
    const all = await gql<{ assets: { key: string; partitionStatus: { counts: Counts } }[] }>(
      `{ assets { key partitionStatus { counts { missing materializing materialized failed stale total } } } }`,
    );
    expect(all.errors).toBeUndefined();
    expect(all.data!.assets.find((x) => x.key === "ps/gappy")!.partitionStatus.counts).toEqual(a.partitionStatus.counts);
    expect(all.data!.assets.find((x) => x.key === "ps/up")!.partitionStatus.counts).toMatchObject({ materialized: 8, missing: 2 });
  });

  it("a changed code version makes the asset's materialised partitions STALE", async () => {
    await writeFile(path.join(defsDir, "ps.ts"), defs("d2"));
    await eventually(
      async () => ((await statusOf("ps/down")).codeVersion === "d2" ? true : undefined),
      60_000,
      "the new code version to load",
    );
    const a = await statusOf("ps/down");
    expect(a.partitionStatus.counts).toMatchObject({ materialized: 0, stale: 3 });
    expect(nodeOf(a, "2025-01-01").staleReasons).toEqual([
      {
        kind: "CODE_VERSION_CHANGED",
        message: `materialised with code version "d1"; the asset's code version is now "d2"`,
        upstreamAssetKey: null,
      },
    ]);
    // The upstream's code version did not change.
    expect((await statusOf("ps/up")).partitionStatus.counts.stale).toBe(0);
  });
});
