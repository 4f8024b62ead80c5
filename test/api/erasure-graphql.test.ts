import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { newApiToken } from "../../src/access/index.js";
import { createApiApp, launchBackfill } from "../../src/api/index.js";
import { BackfillTask, ErasureTask } from "../../src/reconciler/index.js";
import type { EraseHook } from "../../src/sdk/index.js";
import { PgBackfillStore, PgErasureStore, PgLineageStore, PgOutputDeletionStore } from "../../src/storage/index.js";
import { Harness } from "../execution/harness.js";
import { seedAccess } from "../support/access-seed.js";
import { apiServicesOn, graphqlWithToken, type GraphQLAnswer } from "../support/api-services.js";
import { describePostgres } from "../support/pg.js";

// Erasure requests through GraphQL on a server that controls access: requestErasure (a dry run, a request, refusals
// that record nothing), erasureRequests, the proof report of erasureRequest once a reconciler's task carried the
// request out, and retryErasure of a request that did not fail.

const DEFS = `
import { asset, staticPartitions } from "tributary";
const customers = staticPartitions(["c1", "c2", "c3"]);
// Too large for the database: the output goes to the object store.
export const profiles = asset({ key: "eg/customers", partitions: customers, metadata: { pii: ["email"] } },
  async (ctx) => ({ customer: ctx.partition.key, email: ctx.partition.key + "@example.com", blob: "x".repeat(60 * 1024) }));
export const orders = asset({ key: "eg/orders", partitions: customers, deps: { profiles }, erase: async () => undefined },
  async (_ctx, { profiles }) => ({ customer: profiles.customer, orders: 2 }));
`;

const ADMIN = newApiToken();
const VIEWER = newApiToken();

const REQUEST_FIELDS =
  "id state assetKey partitionKeys reason requestedBy backfillId message attempts createdAt updatedAt finishedAt itemCount erasedCount";

describePostgres("erasure requests through GraphQL", () => {
  let h: Harness;
  let app: ReturnType<typeof createApiApp>;
  const hook: EraseHook = (ctx, target) => ctx.log(`removed ${target.partitions.join(",")} from the warehouse`);

  const ask = <T>(token: string, query: string, variables: Record<string, unknown> = {}) =>
    graphqlWithToken<T>(app, token, query, variables);
  const requestErasure = (token: string, input: Record<string, unknown>) =>
    ask<{ requestErasure: Record<string, unknown> & { request: { id: string } | null } }>(
      token,
      `mutation ($input: RequestErasureInput!) {
        requestErasure(input: $input) {
          request { ${REQUEST_FIELDS} }
          assetKey partitionKeys assets { assetKey pii hasPii defined partitionCount eraseHook } partitionCount outputCount dryRun
        }
      }`,
      { input },
    );
  const requests = async () => (await sql<{ n: number }>`select count(*)::int as n from erasure_requests`.execute(h.db)).rows[0]!.n;
  const codeOf = (answer: GraphQLAnswer<unknown>) => answer.errors?.[0]?.extensions?.code;

  beforeAll(async () => {
    h = await Harness.create({
      files: { "eg.ts": DEFS },
      tasks: (s) => [new BackfillTask({ backfills: new PgBackfillStore(s.handle.db), graphs: s.graphs, definitions: s.definitions })],
    });
    const run = await h.waitForRun(await h.launch(["eg/customers", "eg/orders"], { from: "c1", to: "c3" }), 60_000);
    expect(run.status, await h.describe([run.id])).toBe("success");
    await seedAccess(h.db, {
      users: [
        { name: "ada", token: ADMIN, grants: [{ role: "admin", team: null }] },
        { name: "vera", token: VIEWER, grants: [{ role: "viewer", team: null }] },
      ],
    });
    const context = apiServicesOn(h.db, { definitions: h.definitions, graphs: h.graphs, outputStore: h.outputStore, openAccess: false });
    app = createApiApp({ context, ping: async () => {}, version: "test" });
  }, 180_000);

  afterAll(() => h?.stop());

  it("refuses an unknown asset, a partition it does not have, too many partitions and a viewer, recording nothing", async () => {
    const before = await requests();
    const unknown = await requestErasure(ADMIN.token, { assetKey: "eg/custmers", partitionKeys: ["c1"] });
    expect(codeOf(unknown)).toBe("GRAPH_UNKNOWN_ASSET");
    expect(unknown.errors![0]!.message).toContain('"eg/custmers"');
    expect(unknown.data?.requestErasure).toBeNull();

    const invalid = await requestErasure(ADMIN.token, { assetKey: "eg/customers", partitionKeys: ["c1", "c9"] });
    expect(codeOf(invalid)).toBe("ERASURE_PARTITION_INVALID");
    expect(invalid.errors![0]!.message).toContain('"c9"');

    const many = await requestErasure(ADMIN.token, {
      assetKey: "eg/customers",
      partitionKeys: Array.from({ length: 10_001 }, (_, i) => `c${i}`),
    });
    expect(codeOf(many)).toBe("INPUT_INVALID");
    expect(many.errors![0]!.message).toContain("requestErasure: input.partitionKeys");

    // Three requests of 9 000 source partitions in one operation: past the partitions one request may reach.
    const keys = Array.from({ length: 9_000 }, (_, i) => `c${i}`);
    const aliased = await ask(
      ADMIN.token,
      `mutation ($k: [String!]) { a: requestErasure(input: { assetKey: "eg/customers", partitionKeys: $k }) { dryRun }
        b: requestErasure(input: { assetKey: "eg/customers", partitionKeys: $k }) { dryRun }
        c: requestErasure(input: { assetKey: "eg/customers", partitionKeys: $k }) { dryRun } }`,
      { k: keys },
    );
    expect(codeOf(aliased)).toBe("TOO_MANY_PARTITIONS");

    // A viewer may see the impact, not erase it: the refusal keeps its HTTP status.
    const viewer = await requestErasure(VIEWER.token, { assetKey: "eg/customers", partitionKeys: ["c1"] });
    expect(codeOf(viewer)).toBe("FORBIDDEN");
    expect(viewer.status).toBe(403);
    expect(await requests()).toBe(before);
  });

  it("a dry run says what would be erased, which assets have an erase hook, and records nothing", async () => {
    const before = await requests();
    const dry = await requestErasure(ADMIN.token, { assetKey: "eg/customers", partitionKeys: ["c2"], dryRun: true });
    expect(dry.errors).toBeUndefined();
    expect(dry.data!.requestErasure).toEqual({
      request: null,
      assetKey: "eg/customers",
      partitionKeys: ["c2"],
      assets: [
        { assetKey: "eg/customers", pii: ["email"], hasPii: true, defined: true, partitionCount: 1, eraseHook: false },
        { assetKey: "eg/orders", pii: null, hasPii: false, defined: true, partitionCount: 1, eraseHook: true },
      ],
      partitionCount: 2,
      outputCount: 2,
      dryRun: true,
    });
    expect(await requests()).toBe(before);
  });

  it("records a request, lists it, and once it is carried out answers the proof: deletions, hook calls, replacements", async () => {
    const recorded = await requestErasure(ADMIN.token, { assetKey: "eg/customers", partitionKeys: ["c1"], reason: "customer asked" });
    expect(recorded.errors).toBeUndefined();
    const request = recorded.data!.requestErasure.request as Record<string, unknown> & { id: string };
    expect(request).toMatchObject({
      state: "planned",
      assetKey: "eg/customers",
      partitionKeys: ["c1"],
      reason: "customer asked",
      requestedBy: "ada",
      backfillId: null,
      message: null,
      attempts: 0,
      finishedAt: null,
      itemCount: 2,
      erasedCount: 0,
    });
    expect(new Date(request.createdAt as string).toISOString()).toBe(request.createdAt);

    // The viewer sees it listed (newest first), and by state.
    const list = (token: string, variables: Record<string, unknown>) =>
      ask<{ erasureRequests: { id: string; state: string }[] }>(
        token,
        `query ($limit: Int, $state: ErasureState) { erasureRequests(limit: $limit, state: $state) { ${REQUEST_FIELDS} } }`,
        variables,
      );
    expect((await list(VIEWER.token, {})).data!.erasureRequests.map((r) => r.id)).toEqual([request.id]);
    expect((await list(VIEWER.token, { state: "planned", limit: 1 })).data!.erasureRequests).toEqual([request]);
    expect((await list(VIEWER.token, { state: "done" })).data!.erasureRequests).toEqual([]);
    expect(codeOf(await list(VIEWER.token, { limit: 501 }))).toBe("ERASURE_LIST_LIMIT");

    // Only a failed request is retried; a viewer may not retry at all.
    const retry = (token: string, id: string) =>
      ask<{ retryErasure: { id: string } | null }>(token, `mutation ($id: ID!) { retryErasure(id: $id) { ${REQUEST_FIELDS} } }`, { id });
    const notFailed = await retry(ADMIN.token, request.id);
    expect(codeOf(notFailed)).toBe("ERASURE_NOT_FAILED");
    expect(notFailed.data?.retryErasure).toBeNull();
    expect(codeOf(await retry(VIEWER.token, request.id))).toBe("FORBIDDEN");
    expect(codeOf(await retry(ADMIN.token, "00000000-0000-4000-8000-000000000000"))).toBe("ERASURE_NOT_FOUND");

    // A reconciler's task carries it out: the data goes, the hook is called, a backfill re-materialises it.
    const backfills = new PgBackfillStore(h.db);
    const task = new ErasureTask({
      store: new PgErasureStore(h.db),
      deletions: new PgOutputDeletionStore(h.db),
      outputStore: h.outputStore,
      logsDir: h.logsDir,
      graphs: h.graphs,
      lineage: new PgLineageStore(h.db),
      definitions: h.definitions,
      backfills: {
        launch: async (r) =>
          (
            await launchBackfill(
              { graphs: h.graphs, runs: h.runs, definitions: h.definitions, backfills },
              { assetKeys: r.assetKeys, assetPartitions: r.assetPartitions, maxPartitionsPerRun: 100 },
              new Date(),
            )
          ).id,
        status: async (id) => (await backfills.get(id))?.status,
      },
      importHook: async (asset) => (asset.erase ? hook : undefined),
    });
    const store = new PgErasureStore(h.db);
    const final = await h.until(
      async () => {
        await task.work();
        const r = await store.get(request.id);
        return r && (r.state === "done" || r.state === "failed") ? r : undefined;
      },
      60_000,
      "the erasure to end",
    );
    expect(final.state, final.message ?? "").toBe("done");

    const report = await ask<{
      erasureRequest: {
        request: { id: string; state: string; erasedCount: number; finishedAt: string | null; backfillId: string | null };
        items: {
          assetKey: string;
          partitionKey: string;
          eventId: string | null;
          stepId: string | null;
          erasedAt: string | null;
          replacement: { eventId: string; runId: string | null; materializedAt: string | null } | null;
          skippedReason: string | null;
        }[];
        deletions: {
          kind: string;
          assetKey: string;
          partitionKey: string;
          stepId: string | null;
          sizeBytes: number | null;
          ref: string | null;
        }[];
        hookCalls: { id: string; assetKey: string; partitionKeys: string[]; attempt: number; state: string; log: string[] }[];
      } | null;
    }>(
      VIEWER.token,
      `query ($id: ID!) {
        erasureRequest(id: $id) {
          request { ${REQUEST_FIELDS} }
          items { assetKey partitionKey eventId runId stepId erasedAt replacement { eventId runId materializedAt } skippedReason }
          deletions { kind assetKey partitionKey runId stepId tryNumber ref sizeBytes deletedAt }
          hookCalls { id assetKey partitionKeys attempt state startedAt endedAt error log }
        }
      }`,
      { id: request.id },
    );
    expect(report.errors).toBeUndefined();
    const proof = report.data!.erasureRequest!;
    expect(proof.request).toMatchObject({ id: request.id, state: "done", erasedCount: 2, finishedAt: expect.any(String) });
    expect(proof.request.backfillId).toEqual(expect.any(String));
    expect(proof.items.map((i) => `${i.assetKey}@${i.partitionKey}`)).toEqual(["eg/customers@c1", "eg/orders@c1"]);
    for (const item of proof.items) {
      // Ids as strings (they outgrow a 32-bit Int); the replacement is a newer materialisation than the erased one.
      expect(item.eventId).toMatch(/^\d+$/);
      expect(item.stepId).toMatch(/^\d+$/);
      expect(item.erasedAt).not.toBeNull();
      expect(item.skippedReason).toBeNull();
      expect(item.replacement, item.assetKey).toMatchObject({ eventId: expect.stringMatching(/^\d+$/), runId: expect.any(String) });
      expect(Number(item.replacement!.eventId)).toBeGreaterThan(Number(item.eventId));
    }
    const kinds = proof.deletions.map((d) => `${d.kind} ${d.assetKey}`).sort();
    expect(kinds).toEqual(["log eg/customers", "log eg/orders", "object eg/customers", "output eg/customers", "output eg/orders"]);
    const object = proof.deletions.find((d) => d.kind === "object")!;
    expect(object.sizeBytes).toBeGreaterThan(60 * 1024);
    expect(proof.deletions.find((d) => d.kind === "output" && d.assetKey === "eg/customers")!.ref).toBe(object.ref);
    expect(proof.hookCalls).toEqual([
      expect.objectContaining({
        id: expect.stringMatching(/^\d+$/),
        assetKey: "eg/orders",
        partitionKeys: ["c1"],
        attempt: 1,
        state: "success",
        log: ["removed c1 from the warehouse"],
      }),
    ]);

    expect((await list(ADMIN.token, { state: "done" })).data!.erasureRequests.map((r) => r.id)).toEqual([request.id]);
    const unknown = await ask(ADMIN.token, `{ erasureRequest(id: "00000000-0000-4000-8000-000000000000") { request { id } } }`);
    expect(codeOf(unknown)).toBe("ERASURE_NOT_FOUND");
  });
});
