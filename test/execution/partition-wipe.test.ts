import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { RequestAccess, type Caller } from "../../src/access/index.js";
import { createApiApp, wipePartitions, type WipePartitionsRequest, type WipePartitionsServices } from "../../src/api/index.js";
import { AccessDeniedError, TributaryError } from "../../src/errors/index.js";
import { AutomationTask } from "../../src/reconciler/index.js";
import {
  PgAccessStore,
  PgAutomationStore,
  PgOutputDeletionStore,
  PgPartitionWipeStore,
  type OutputStore,
} from "../../src/storage/index.js";
import { seedAccess } from "../support/access-seed.js";
import { apiServicesOn } from "../support/api-services.js";
import { describePostgres } from "../support/pg.js";
import { Harness } from "./harness.js";

// Partition wipe on Postgres: what goes (statuses, materialisation events with their lineage, check results, outputs
// inline and in the object store), what stays (other partitions, downstream data, run history, a wipe event per
// partition, the audit record), how automation sees it (missing again), and every refusal leaving everything as it was.

const defs = (flag: string) => `
import { existsSync } from "node:fs";
import { asset, check, daily, onMissing } from "tributary";
const days = daily({ start: "2025-03-01", end: "2025-03-07" });
// Odd days write an output too large for the database: it goes to the object store.
export const events = asset({ key: "wipe/events", partitions: days }, async (ctx) =>
  Number(ctx.partition.key.slice(-1)) % 2 === 1 ? { day: ctx.partition.key, blob: "x".repeat(60 * 1024) } : { day: ctx.partition.key });
export const rollup = asset({ key: "wipe/rollup", partitions: days, deps: { events } }, async (_ctx, { events }) => events.day);
export const hasDay = check(events, { name: "has_day" }, (_ctx, value) => ({ passed: typeof value.day === "string" }));
export const snapshot = asset({ key: "wipe/snapshot", automation: onMissing() }, async () => ({ at: 1 }));
export const broken = asset({ key: "wipe/broken", automation: onMissing() }, async () => {
  throw new Error("the export is corrupt");
});
export const slow = asset({ key: "wipe/slow", partitions: days }, async () => {
  while (!existsSync(${JSON.stringify(flag)})) await new Promise((resolve) => setTimeout(resolve, 20));
  return 1;
});
`;

const DAYS = ["2025-03-01", "2025-03-02", "2025-03-03", "2025-03-04"];

describePostgres("partition wipe", () => {
  let h: Harness;
  let flag: string;
  const services = (outputStore: OutputStore | null = h.outputStore): WipePartitionsServices => ({
    graphs: h.graphs,
    definitions: h.definitions,
    wipes: new PgPartitionWipeStore(h.db),
    deletions: new PgOutputDeletionStore(h.db),
    outputStore,
  });
  const wipe = (request: WipePartitionsRequest, outputStore?: OutputStore | null) =>
    wipePartitions(services(outputStore), request, new Date());
  /** Everything a wipe could touch, as counts: a refused wipe must leave all of them as they were. */
  const counts = async () =>
    (
      await sql<{ n: string }>`
        select concat_ws('/', (select count(*) from partition_status), (select count(*) from events), (select count(*) from event_inputs),
                         (select count(*) from outputs), (select count(*) from check_results), (select count(*) from output_object_deletions),
                         (select count(*) from audit_events)) as n`.execute(h.db)
    ).rows[0]!.n;
  const rowsOf = async (assetKey: string, partitionKey: string) =>
    (
      await sql<{ statuses: number; materializations: number; wipes: number; outputs: number; objects: number; checks: number }>`
        select (select count(*) from partition_status where asset_key = ${assetKey} and partition_key = ${partitionKey})::int as statuses,
               (select count(*) from events where asset_key = ${assetKey} and partition_key = ${partitionKey}
                 and kind = 'materialization')::int as materializations,
               (select count(*) from events where asset_key = ${assetKey} and partition_key = ${partitionKey} and kind = 'wipe')::int as wipes,
               (select count(*) from outputs where asset_key = ${assetKey} and partition_key = ${partitionKey})::int as outputs,
               (select count(*) from outputs where asset_key = ${assetKey} and partition_key = ${partitionKey}
                 and storage_ref is not null)::int as objects,
               (select count(*) from check_results where asset_key = ${assetKey} and partition_key = ${partitionKey})::int as checks`.execute(
        h.db,
      )
    ).rows[0]!;
  const objectRefs = async (assetKey: string, partitionKey: string) =>
    (
      await sql<{ storage_ref: string }>`select storage_ref from outputs where asset_key = ${assetKey} and partition_key = ${partitionKey}
                                         and storage_ref is not null`.execute(h.db)
    ).rows.map((r) => r.storage_ref);

  beforeAll(async () => {
    h = await Harness.create({ files: {}, start: false });
    flag = path.join(await h.tempDir("tributary-wipe-flag-"), "release");
    await h.redefine({ "wipe.ts": defs(flag) });
    await h.startNodes();
    // Materialised twice, so a partition has two materialisations and two outputs to remove.
    for (let i = 0; i < 2; i++) {
      const run = await h.waitForRun(await h.launch(["wipe/events", "wipe/rollup"], { from: DAYS[0]!, to: DAYS.at(-1)! }), 60_000);
      expect(run.status, await h.describe([run.id])).toBe("success");
    }
    const snapshot = await h.waitForRun(await h.launch(["wipe/snapshot"]), 60_000);
    expect(snapshot.status).toBe("success");
    const broken = await h.waitForRun(await h.launch(["wipe/broken"]), 60_000);
    expect(broken.status).toBe("failed");
  }, 180_000);

  afterAll(() => h?.stop());

  async function expectRefused(request: WipePartitionsRequest, code: string, ...fragments: string[]): Promise<void> {
    const before = await counts();
    const error = await wipe(request).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error, `expected ${code}`).toBeInstanceOf(TributaryError);
    expect((error as TributaryError).code, (error as Error).message).toBe(code);
    for (const f of fragments) expect((error as Error).message).toContain(f);
    expect(await counts()).toBe(before);
  }

  it("a dry run counts what a wipe removes and removes nothing", async () => {
    const before = await counts();
    const dry = await wipe({ assetKey: "wipe/events", partitions: ["2025-03-03"], dryRun: true });
    expect(dry).toMatchObject({
      assetKey: "wipe/events",
      partitionKeys: ["2025-03-03"],
      partitionCount: 1,
      statusesRemoved: 1,
      materializationsRemoved: 2,
      outputsRemoved: 2,
      objectCount: 2,
      checkResultsRemoved: 2,
      objectsDeleted: 0,
      objectsPending: [],
      dryRun: true,
    });
    expect(await counts()).toBe(before);
    for (const ref of await objectRefs("wipe/events", "2025-03-03")) expect(existsSync(ref.slice("file://".length))).toBe(true);
  });

  it("removes the partitions' statuses, materialisations, check results and outputs (objects too), and keeps the rest", async () => {
    const objects = [...(await objectRefs("wipe/events", "2025-03-01")), ...(await objectRefs("wipe/events", "2025-03-03"))];
    expect(objects).toHaveLength(4);
    const rollupBefore = await rowsOf("wipe/rollup", "2025-03-01");
    const rollupInputs = await sql<{ n: number }>`
      select count(*)::int as n from event_inputs where upstream_asset_key = 'wipe/events' and upstream_partition_key = '2025-03-01'`.execute(
      h.db,
    );
    const steps = (await sql<{ n: number }>`select count(*)::int as n from steps`.execute(h.db)).rows[0]!.n;

    const wiped = await wipe({
      assetKey: "wipe/events",
      partitions: ["2025-03-01", "2025-03-02", "2025-03-03"],
      reason: "bad upstream file",
    });
    expect(wiped).toMatchObject({
      partitionKeys: ["2025-03-01", "2025-03-02", "2025-03-03"],
      statusesRemoved: 3,
      materializationsRemoved: 6,
      outputsRemoved: 6,
      objectCount: 4,
      objectsDeleted: 4,
      objectsPending: [],
      checkResultsRemoved: 6,
      dryRun: false,
    });
    for (const day of ["2025-03-01", "2025-03-02", "2025-03-03"]) {
      expect(await rowsOf("wipe/events", day)).toEqual({ statuses: 0, materializations: 0, wipes: 1, outputs: 0, objects: 0, checks: 0 });
    }
    for (const ref of objects) expect(existsSync(ref.slice("file://".length)), ref).toBe(false);
    expect((await sql<{ n: number }>`select count(*)::int as n from output_object_deletions`.execute(h.db)).rows[0]!.n).toBe(0);
    // The wipe event says why.
    const [event] = (
      await sql<{ metadata: { reason: string } }>`select metadata from events where kind = 'wipe' and partition_key = '2025-03-01'`.execute(
        h.db,
      )
    ).rows;
    expect(event!.metadata).toEqual({ reason: "bad upstream file" });

    // Untouched: the other partition, the downstream asset's data and what it read, the runs' history.
    expect(await rowsOf("wipe/events", "2025-03-04")).toMatchObject({ statuses: 1, materializations: 2, outputs: 2, checks: 2, wipes: 0 });
    expect(await rowsOf("wipe/rollup", "2025-03-01")).toEqual(rollupBefore);
    expect(
      (
        await sql<{ n: number }>`select count(*)::int as n from event_inputs
                               where upstream_asset_key = 'wipe/events' and upstream_partition_key = '2025-03-01'`.execute(h.db)
      ).rows[0]!.n,
    ).toBe(rollupInputs.rows[0]!.n);
    expect((await sql<{ n: number }>`select count(*)::int as n from steps`.execute(h.db)).rows[0]!.n).toBe(steps);

    // The audit trail has who wiped what, and why.
    const [audit] = await new PgAccessStore(h.db).auditEvents({ action: "wipePartitions", limit: 1 });
    expect(audit).toMatchObject({
      principalName: "local",
      outcome: "success",
      assets: ["wipe/events"],
      partitions: ["2025-03-01", "2025-03-02", "2025-03-03"],
      detail: { reason: "bad upstream file", statusesRemoved: 3, outputsRemoved: 6, objectCount: 4 },
    });

    // Wiping again finds nothing more to remove, and says so.
    expect(await wipe({ assetKey: "wipe/events", from: "2025-03-01", to: "2025-03-02" })).toMatchObject({
      partitionKeys: ["2025-03-01", "2025-03-02"],
      statusesRemoved: 0,
      materializationsRemoved: 0,
      outputsRemoved: 0,
    });
  });

  it("automation sees a wiped partition as missing again, a failed one too", async () => {
    const task = new AutomationTask({
      store: new PgAutomationStore(h.db),
      runs: h.runs,
      graphs: h.graphs,
      definitions: h.definitions,
      owner: "wipe-test",
      minIntervalMs: 0,
    });
    const automationRuns = async (assetKey: string) =>
      (
        await sql<{ n: number }>`select count(*)::int as n from runs r join steps s on s.run_id = r.id
                               where r.origin = 'automation' and s.asset_key = ${assetKey}`.execute(h.db)
      ).rows[0]!.n;
    // Materialised, and failed: onMissing asks for neither.
    await task.tick(new Date());
    expect([await automationRuns("wipe/snapshot"), await automationRuns("wipe/broken")]).toEqual([0, 0]);
    expect(await wipe({ assetKey: "wipe/snapshot" })).toMatchObject({
      partitionKeys: [""],
      statusesRemoved: 1,
      materializationsRemoved: 1,
    });
    expect(await wipe({ assetKey: "wipe/broken" })).toMatchObject({ statusesRemoved: 1, materializationsRemoved: 0 });
    await task.tick(new Date(Date.now() + 1_000));
    expect([await automationRuns("wipe/snapshot"), await automationRuns("wipe/broken")]).toEqual([1, 1]);
    await task.stop();
    // The runs it started end before the next test counts rows: their outputs and statuses are not a wipe's doing.
    const started = await sql<{ id: string }>`select id from runs where origin = 'automation'`.execute(h.db);
    await h.waitForRuns(
      started.rows.map((r) => r.id),
      60_000,
    );
  });

  it("refuses while a run writes one of the partitions, naming the run, and removes nothing", async () => {
    const runId = await h.launch(["wipe/slow"], { partition: "2025-03-05" });
    await h.until(
      async () =>
        (await sql<{ state: string }>`select state from steps where run_id = ${runId}`.execute(h.db)).rows[0]?.state === "running",
      30_000,
      "the slow step to run",
    );
    await expectRefused(
      { assetKey: "wipe/slow", from: "2025-03-04", to: "2025-03-06" },
      "WIPE_PARTITIONS_IN_USE",
      `run ${runId} (partition "2025-03-05", step running)`,
      "Nothing was wiped",
    );
    await writeFile(flag, "");
    expect((await h.waitForRun(runId, 60_000)).status).toBe("success");
    expect(await wipe({ assetKey: "wipe/slow", partitions: ["2025-03-05"] })).toMatchObject({
      statusesRemoved: 1,
      materializationsRemoved: 1,
    });
  });

  it.each([
    [{ assetKey: "wipe/event", partitions: ["2025-03-04"] }, "GRAPH_UNKNOWN_ASSET", '"wipe/event"', "wipe/events"],
    [{ assetKey: "wipe/events", partitions: ["2025-02-28"] }, "PARTITION_KEY_INVALID", "2025-02-28"],
    [{ assetKey: "wipe/events", partitions: ["2025-3-04"] }, "PARTITION_KEY_INVALID", "2025-3-04"],
    [{ assetKey: "wipe/events", from: "2025-03-05", to: "2025-03-02" }, "PARTITION_RANGE_INVALID", "2025-03-05"],
    [{ assetKey: "wipe/events", partitions: ["2025-03-04"], from: "2025-03-01" }, "WIPE_SELECTION_CONFLICT", "not both"],
    [{ assetKey: "wipe/events" }, "PARTITION_SELECTION_REQUIRED", '"wipe/events" is partitioned'],
    [{ assetKey: "wipe/snapshot", partitions: ["2025-03-04"] }, "PARTITION_SELECTION_INVALID", "not partitioned"],
    [
      { assetKey: "wipe/events", partitions: ["2025-03-04"], reason: "why ".repeat(251) },
      "WIPE_REASON_TOO_LONG",
      "1004 characters long; at most 1000",
    ],
  ] as [WipePartitionsRequest, string, ...string[]][])(
    "refuses bad input with %$1s, naming what is wrong, removing nothing (%#)",
    async (request, code, ...fragments) => {
      await expectRefused(request, code, ...fragments);
    },
  );

  it("needs admin on the asset: an operator is refused, the refusal is recorded and nothing is removed", async () => {
    await seedAccess(h.db, {
      teams: [{ name: "data", groups: ["wipe"] }],
      users: [{ name: "ops", grants: [{ role: "operator", team: "data" }] }],
    });
    const access = new PgAccessStore(h.db);
    const ops = (await access.principal("ops"))!;
    const caller: Caller = {
      principalId: ops.id,
      name: "ops",
      kind: "user",
      grants: ops.grants,
      via: "api-token",
      tokenId: null,
      address: null,
    };
    const guard = new RequestAccess(caller, {
      teams: () => access.listTeams(),
      ownership: (keys) => Promise.resolve(keys.map((key) => ({ key, group: "wipe", owner: null }))),
      record: (entry) => access.audit(entry, new Date()),
    });
    const before = await rowsOf("wipe/events", "2025-03-04");
    await expect(
      wipePartitions(services(), { assetKey: "wipe/events", partitions: ["2025-03-04"] }, new Date(), guard),
    ).rejects.toBeInstanceOf(AccessDeniedError);
    expect(await rowsOf("wipe/events", "2025-03-04")).toEqual(before);
    const [denied] = await access.auditEvents({ principalName: "ops", limit: 1 });
    expect(denied).toMatchObject({
      action: "wipePartitions",
      outcome: "denied",
      assets: ["wipe/events"],
      detail: { missingRole: "admin" },
    });
  });

  it("through GraphQL: wipes with the API's services, and names a bad field of the input", async () => {
    const context = apiServicesOn(h.db, { definitions: h.definitions, graphs: h.graphs, outputStore: h.outputStore });
    const app = createApiApp({ context, ping: async () => {}, version: "test" });
    const post = async (input: unknown) =>
      (await (
        await app.request("/graphql", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            query: `mutation ($input: WipePartitionsInput!) { wipePartitions(input: $input) {
              assetKey partitionCount partitionKeys statusesRemoved materializationsRemoved outputsRemoved objectCount objectsDeleted
              objectsPending { storageRef error } dryRun } }`,
            variables: { input },
          }),
        })
      ).json()) as { data?: { wipePartitions: Record<string, unknown> }; errors?: { message: string; extensions?: { code?: string } }[] };
    const wiped = await post({ assetKey: "wipe/events", partitions: ["2025-03-04"], reason: "through the API" });
    expect(wiped.errors).toBeUndefined();
    expect(wiped.data?.wipePartitions).toEqual({
      assetKey: "wipe/events",
      partitionCount: 1,
      partitionKeys: ["2025-03-04"],
      statusesRemoved: 1,
      materializationsRemoved: 2,
      outputsRemoved: 2,
      objectCount: 0,
      objectsDeleted: 0,
      objectsPending: [],
      dryRun: false,
    });
    const bad = await post({ assetKey: "wipe/events", partitions: [] });
    expect(bad.errors?.[0]).toMatchObject({
      message: "wipePartitions: input.partitions: list at least one partition, or give a range (from/to)",
      extensions: { code: "INPUT_INVALID" },
    });
    const unknown = await post({ assetKey: "wipe/nothing", partitions: ["2025-03-04"] });
    expect(unknown.errors?.[0]?.extensions?.code).toBe("GRAPH_UNKNOWN_ASSET");
  });
});
