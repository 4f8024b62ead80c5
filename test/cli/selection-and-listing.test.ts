import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { runCli } from "./run-cli.js";

// Selecting and listing partitions from the command line, in this process (no server at --url): refusals that name
// the bad value and the flags to use, a paged `partitions`, stale reasons in its JSON, a selection per dimension,
// and an asset on an executor nothing here can run.
const NO_SERVER = "http://127.0.0.1:9";

const DEFINITIONS = `import { asset, daily, dep, multiPartitions, staticPartitions } from "tributary";
const days = daily({ start: "2025-01-01" });
export const sales = asset(
  { key: "t/sales", partitions: multiPartitions({ date: days, region: staticPartitions(["eu", "us", "apac"]) }) },
  async (ctx) => ctx.partition.key,
);
export const up = asset({ key: "t/up", partitions: days }, async (ctx) => ctx.partition.key);
export const down = asset({ key: "t/down", partitions: days, deps: { up: dep(up) } }, async (_ctx, { up }) => String(up));
export const queued = asset({ key: "t/queued", executor: "bullmq" }, async () => 1);
`;

type PartitionsJson = {
  totalCount: number;
  limit: number | null;
  partitions: { key: string; status: string; staleReasons: Record<string, unknown>[] }[];
};

describePostgres("partition selection and listing on the command line", () => {
  const database = useTestDatabase();
  let dir: string;

  const cli = (args: string[]) =>
    runCli([...args, "--url", NO_SERVER, "--definitions", dir], { env: { DATABASE_URL: database.url, REDIS_URL: "" }, timeoutMs: 180_000 });

  async function json<T>(args: string[]): Promise<T> {
    const r = await cli([...args, "--json"]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    return JSON.parse(r.stdout) as T;
  }

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "tributary-selection-"));
    await writeFile(path.join(dir, "defs.ts"), DEFINITIONS);
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("triggers: an unknown --asset or --kind is refused, naming it (with the nearest asset, and the kinds there are)", async () => {
    const asset = await cli(["triggers", "--asset", "t/sale"]);
    expect(asset.code).toBe(1);
    expect(asset.stderr).toMatch(/--asset: no asset has the key "t\/sale"; did you mean "t\/sales"\?/);
    const kind = await cli(["triggers", "--kind", "bogus"]);
    expect(kind.code).toBe(1);
    expect(kind.stderr).toMatch(/--kind: "bogus" is not a trigger kind; the built-in kinds are .*fileExists.*httpOk/);
    // A defined asset without triggers is simply none.
    const none = await cli(["triggers", "--asset", "t/sales", "--kind", "fileExists"]);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toMatch(/^no triggers$/m);
  }, 240_000);

  it("materialize without a selection names the flags to choose partitions with", async () => {
    const r = await cli(["materialize", "t/up"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /"t\/up" is partitioned: choose the partitions with --partition <key>, a range --from <key> --to <key>, --all/,
    );
    expect(r.stderr).not.toMatch(/all, keys, or a range from–to/);
  }, 240_000);

  it("partitions shows the latest 50 and says how many there are; --limit and --all show other amounts, --json alike", async () => {
    const r = await cli(["partitions", "t/up"]);
    expect(r.code, r.stderr).toBe(0);
    const total = Number(/(\d+) partition\(s\)/.exec(r.stdout)?.[1]);
    expect(total).toBeGreaterThan(300);
    const rows = r.stdout.split("\n").filter((l) => /^\d{4}-\d\d-\d\d\s/.test(l));
    expect(rows).toHaveLength(50);
    expect(r.stdout).toMatch(new RegExp(`showing the latest 50 of ${total}; use --from/--to, or --limit <n> or --all`));

    const limited = await json<PartitionsJson>(["partitions", "t/up", "--limit", "3"]);
    expect(limited.totalCount).toBe(total);
    expect(limited.limit).toBe(3);
    expect(limited.partitions).toHaveLength(3);
    const all = await json<PartitionsJson>(["partitions", "t/up", "--all"]);
    expect(all.partitions).toHaveLength(total);
    expect(limited.partitions.map((p) => p.key)).toEqual(all.partitions.slice(-3).map((p) => p.key));
    expect(all.partitions[0]!.key).toBe("2025-01-01");

    const bad = await cli(["partitions", "t/up", "--limit", "0"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--limit: "0" must be a whole number from 1 to/);
  }, 240_000);

  it("partitions --dim: a slice along each dimension, the cross product; an unknown dimension or key is named", async () => {
    const eu = await json<PartitionsJson>(["partitions", "t/sales", "--dim", "date=2025-03-02..2025-03-08", "--dim", "region=eu"]);
    expect(eu.totalCount).toBe(7);
    expect(eu.partitions.map((p) => p.key)).toEqual(["02", "03", "04", "05", "06", "07", "08"].map((d) => `2025-03-${d}|eu`));
    const two = await json<PartitionsJson>(["partitions", "t/sales", "--dim", "date=2025-03-02", "--dim", "region=eu,apac"]);
    expect(two.partitions.map((p) => p.key)).toEqual(["2025-03-02|eu", "2025-03-02|apac"]);

    const unknown = await cli(["partitions", "t/sales", "--dim", "regon=eu"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(
      /asset "t\/sales" has no dimension "regon" \(did you mean "region"\?\); its dimensions are "date", "region"/,
    );
    const badKey = await cli(["partitions", "t/sales", "--dim", "region=mars"]);
    expect(badKey.code).toBe(1);
    expect(badKey.stderr).toMatch(/asset "t\/sales", dimension "region": "mars" is not a partition of/);
    const malformed = await cli(["partitions", "t/sales", "--dim", "region"]);
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toMatch(/--dim: "region" is not dimension=keys/);
    const single = await cli(["partitions", "t/up", "--dim", "date=2025-03-02"]);
    expect(single.code).toBe(1);
    expect(single.stderr).toMatch(/asset "t\/up" is partitioned by one dimension only/);
  }, 240_000);

  it("materialize, backfill and clear take --dim: the run covers exactly the slice", async () => {
    const run = await json<{ ok: boolean; run: { id: string; stepsTotal: number } }>([
      "materialize",
      "t/sales",
      "--dim",
      "date=2025-03-02..2025-03-03",
      "--dim",
      "region=eu,us",
    ]);
    expect(run.ok).toBe(true);
    expect(run.run.stepsTotal).toBe(4);
    const listed = await json<PartitionsJson>(["partitions", "t/sales", "--dim", "date=2025-03-01..2025-03-03"]);
    expect(listed.partitions.filter((p) => p.status === "materialized").map((p) => p.key)).toEqual([
      "2025-03-02|eu",
      "2025-03-02|us",
      "2025-03-03|eu",
      "2025-03-03|us",
    ]);

    const cleared = await json<{ ok: boolean; cleared: { assetKey: string; count: number; sample: string[] }[] }>([
      "clear",
      "t/sales",
      "--dim",
      "date=2025-03-03",
      "--dim",
      "region=us",
    ]);
    expect(cleared.cleared).toEqual([{ assetKey: "t/sales", count: 1, sample: ["2025-03-03|us"] }]);

    const backfill = await json<{ backfill: { requested: number; dimensions: unknown; status: string } }>([
      "backfill",
      "t/sales",
      "--dim",
      "date=2025-03-04..2025-03-05",
      "--dim",
      "region=apac",
      "--max-partitions-per-run",
      "10",
    ]);
    expect(backfill.backfill.requested).toBe(2);
    expect(backfill.backfill.dimensions).toEqual([
      { name: "date", from: "2025-03-04", to: "2025-03-05" },
      { name: "region", keys: ["apac"] },
    ]);

    const both = await cli(["materialize", "t/sales", "--dim", "region=eu", "--partition", "2025-03-02|eu"]);
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/--dim selects partitions per dimension: leave out --partition, --from and --to/);
  }, 400_000);

  it("partitions --json gives a stale partition's reasons, as GraphQL does", async () => {
    await json(["materialize", "t/up", "t/down", "--partition", "2025-02-01"]);
    await json(["materialize", "t/up", "--partition", "2025-02-01"]);
    const listed = await json<PartitionsJson>(["partitions", "t/down", "--from", "2025-02-01", "--to", "2025-02-01"]);
    expect(listed.partitions).toHaveLength(1);
    const [p] = listed.partitions;
    expect(p!.status).toBe("stale");
    expect(p!.staleReasons).toEqual([
      {
        kind: "upstream_updated",
        message: expect.stringMatching(
          /^upstream "t\/up" partition "2025-02-01" was materialised again \(event \d+\) after this partition read event \d+$/,
        ),
        upstreamAssetKey: "t/up",
        upstreamPartitionKey: "2025-02-01",
        readEventId: expect.stringMatching(/^\d+$/),
        latestEventId: expect.stringMatching(/^\d+$/),
      },
    ]);
    const fresh = await json<PartitionsJson>(["partitions", "t/up", "--from", "2025-02-01", "--to", "2025-02-01"]);
    expect(fresh.partitions[0]).toMatchObject({ status: "materialized", staleReasons: [] });
  }, 400_000);

  it("an asset on the bullmq executor without Redis is refused at launch, naming it and REDIS_URL", async () => {
    const before = (await json<{ runs: unknown[] }>(["runs"])).runs.length;
    const r = await cli(["materialize", "t/queued"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/"t\/queued" runs on executor "bullmq", which cannot run here: no Redis is configured; set REDIS_URL/);
    // Nothing was launched.
    expect((await json<{ runs: unknown[] }>(["runs"])).runs).toHaveLength(before);
  }, 240_000);
});
