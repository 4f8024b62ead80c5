import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createApiApp } from "../../src/api/index.js";
import { graphqlAt } from "../cli/run-cli.js";
import { countingStatements } from "./graphql-fixture.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { apiServicesOn } from "../support/api-services.js";
import { LATER, seedTriggers, startApiServer, type ApiServer, type SeededTriggers, type TriggerName } from "./triggers-seed.js";

type GraphQLResult<T> = { data?: T; errors?: { message: string; extensions?: { code?: string } }[] };
type Node = {
  id: string;
  kind: string;
  status: string;
  stepId: string | null;
  runId: string | null;
  assetKey: string | null;
  partitionKey: string | null;
};
type Page = { triggers: { nodes: Node[]; endCursor: string | null; hasNextPage: boolean } };

const PAGE = `query ($status: String, $assetKey: String, $kind: String, $first: Int, $after: String) {
  triggers(status: $status, assetKey: $assetKey, kind: $kind, first: $first, after: $after) {
    nodes { id kind status stepId runId assetKey partitionKey }
    endCursor hasNextPage
  }
}`;

describePostgres("GraphQL triggers", () => {
  const database = useTestDatabase();
  let seeded: SeededTriggers;
  let server: ApiServer;

  /** Through a real API server, as a client sees it. */
  const gql = <T>(query: string, variables: Record<string, unknown> = {}): Promise<GraphQLResult<T>> =>
    graphqlAt<T>(server.port, query, variables);

  async function page(variables: Record<string, unknown>): Promise<Page["triggers"]> {
    const r = await gql<Page>(PAGE, variables);
    expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
    return r.data!.triggers;
  }

  const idsOf = (...names: TriggerName[]) => names.map((n) => String(seeded.ids[n]));

  beforeAll(async () => {
    seeded = await seedTriggers(database.db);
    server = await startApiServer(database.url);
  }, 90_000);

  afterAll(() => server?.stop());

  it("lists waiting triggers first, newest first within each group, with what they are for", async () => {
    const all = await page({});
    expect(all.nodes.map((n) => n.id)).toEqual(
      idsOf("api", "feed01", "second", "first", "feed26", "feed27", "feed28", "report", "olderFirst"),
    );
    expect(all.hasNextPage).toBe(false);
    const first = all.nodes.find((n) => n.id === String(seeded.ids.first))!;
    // A step's trigger names the step's run, asset and partition.
    expect(first).toEqual({
      id: String(seeded.ids.first),
      kind: "fileExists",
      status: "waiting",
      stepId: String(seeded.steps.first),
      runId: seeded.runId,
      assetKey: "feed/clean",
      partitionKey: "2025-03-01",
    });
    expect(all.nodes.find((n) => n.id === String(seeded.ids.api))).toMatchObject({
      stepId: null,
      runId: null,
      assetKey: "partner/api",
      partitionKey: null,
    });
  });

  it("filters by status, asset (source or step) and kind", async () => {
    expect((await page({ status: "waiting" })).nodes.map((n) => n.id)).toEqual(idsOf("api", "feed01", "second", "first"));
    expect((await page({ status: "timed_out" })).nodes.map((n) => n.id)).toEqual(idsOf("feed27"));
    expect((await page({ assetKey: "partner/feed" })).nodes.map((n) => n.id)).toEqual(idsOf("feed01", "feed26", "feed27", "feed28"));
    expect((await page({ assetKey: "feed/clean" })).nodes.map((n) => n.id)).toEqual(idsOf("second", "first", "olderFirst"));
    expect((await page({ assetKey: "feed/clean", status: "fired", kind: "at" })).nodes.map((n) => n.id)).toEqual(idsOf("olderFirst"));
    expect((await page({ kind: "httpOk" })).nodes.map((n) => n.id)).toEqual(idsOf("api"));
    expect((await page({ assetKey: "nobody" })).nodes).toEqual([]);
  });

  it("pages with first/after across the waiting and ended groups without gaps or repeats", async () => {
    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    do {
      const p: Page["triggers"] = await page({ first: 2, ...(after ? { after } : {}) });
      seen.push(...p.nodes.map((n) => n.id));
      after = p.hasNextPage ? p.endCursor : null;
      pages++;
    } while (after);
    expect(pages).toBe(5);
    expect(seen).toEqual(idsOf("api", "feed01", "second", "first", "feed26", "feed27", "feed28", "report", "olderFirst"));
    const filtered = await page({ assetKey: "partner/feed", first: 1 });
    expect(filtered).toMatchObject({ hasNextPage: true });
    expect((await page({ assetKey: "partner/feed", first: 10, after: filtered.endCursor })).nodes.map((n) => n.id)).toEqual(
      idsOf("feed26", "feed27", "feed28"),
    );
  });

  it("returns the full trigger, its counts by status, and one by id", async () => {
    const r = await gql<{
      trigger: Record<string, unknown>;
      triggerCounts: Record<string, number>;
      feed: Record<string, number>;
      none: unknown;
    }>(
      `query ($id: String!) {
        trigger(id: $id) { id kind args status attempts pollIntervalMs softFail nextCheckAt timeoutAt lastCheckedAt lastResult payload error
                           leaseOwner leaseExpiresAt partitionWindow createdAt endedAt }
        triggerCounts { waiting fired failed timedOut canceled }
        feed: triggerCounts(assetKey: "partner/feed") { waiting fired failed timedOut canceled }
        none: trigger(id: "999999") { id }
      }`,
      { id: String(seeded.ids.api) },
    );
    expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
    expect(r.data!.trigger).toMatchObject({
      kind: "httpOk",
      args: { url: "http://partner.example/ready", status: 200 },
      status: "waiting",
      attempts: 2,
      pollIntervalMs: 5000,
      softFail: false,
      nextCheckAt: LATER.toISOString(),
      timeoutAt: LATER.toISOString(),
      lastResult: { error: "connect ECONNREFUSED 10.0.0.1:80" },
      error: { code: "TRIGGER_CHECK_FAILED", consecutiveFailures: 2 },
      payload: null,
      leaseOwner: null,
      endedAt: null,
    });
    expect(r.data!.triggerCounts).toEqual({ waiting: 4, fired: 3, failed: 0, timedOut: 1, canceled: 1 });
    expect(r.data!.feed).toEqual({ waiting: 1, fired: 1, failed: 0, timedOut: 1, canceled: 1 });
    expect(r.data!.none).toBeNull();
    // An ended trigger has no next check.
    const ended = await gql<{ trigger: { nextCheckAt: unknown; payload: unknown } }>(
      `{ trigger(id: "${seeded.ids.feed28}") { nextCheckAt payload } }`,
    );
    expect(ended.data!.trigger).toEqual({ nextCheckAt: null, payload: { size: 10 } });
  });

  it("Step.waitingFor is the step's current trigger, whatever its status; null for steps that never deferred", async () => {
    await sql`insert into steps (run_id, asset_key, partition_key, state) values (${seeded.runId}::uuid, 'feed/other', '', 'pending')`.execute(
      database.db,
    );
    const r = await gql<{
      run: { steps: { assetKey: string; partitionKey: string; waitingFor: { id: string; status: string } | null }[] };
    }>(`query ($id: String!) { run(id: $id) { steps { assetKey partitionKey waitingFor { id status } } } }`, { id: seeded.runId });
    expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
    const byStep = Object.fromEntries(r.data!.run.steps.map((s) => [`${s.assetKey} ${s.partitionKey}`, s.waitingFor]));
    expect(byStep).toEqual({
      // Deferred twice: the latest wait, not the fired older one.
      "feed/clean 2025-03-01": { id: String(seeded.ids.first), status: "waiting" },
      "feed/clean 2025-03-02": { id: String(seeded.ids.second), status: "waiting" },
      "feed/report ": { id: String(seeded.ids.report), status: "fired" },
      "feed/other ": null,
    });
  });

  it.each([
    [
      { status: "sleeping" },
      /^triggers: status: "sleeping" is not a trigger status; use one of waiting, fired, failed, timed_out, canceled$/,
    ],
    [{ status: "" }, /^triggers: status: "" is not a trigger status/],
    [{ first: 0 }, /^triggers: first: .*>=1/],
    [{ first: 501 }, /^triggers: first: at most 500 per page$/],
    [{ assetKey: "" }, /^triggers: assetKey: must not be empty; leave it out to see all$/],
    [{ kind: "" }, /^triggers: kind: must not be empty/],
    [{ after: "" }, /^triggers: after: must not be empty/],
    [{ after: "12" }, /^after: "12" is not a trigger cursor; pass the endCursor of the previous page$/],
    [{ after: "0:1; drop table triggers" }, /^after: "0:1; drop table triggers" is not a trigger cursor/],
  ])("rejects bad triggers() arguments %j with INPUT_INVALID naming the argument", async (variables, message) => {
    const r = await gql<Page>(PAGE, variables);
    expect(r.data?.triggers ?? null).toBeNull();
    expect(r.errors?.[0]?.extensions?.code).toBe("INPUT_INVALID");
    expect(r.errors?.[0]?.message).toMatch(message);
  });

  it("rejects a bad trigger id and empty triggerCounts filters with INPUT_INVALID naming the argument", async () => {
    for (const [query, message] of [
      [`{ trigger(id: "abc") { id } }`, /^trigger: id: must be a trigger id \(a positive whole number\)$/],
      [`{ trigger(id: "0") { id } }`, /^trigger: id: must be a trigger id/],
      [`{ triggerCounts(kind: "") { waiting } }`, /^triggerCounts: kind: must not be empty/],
    ] as const) {
      const r = await gql(query);
      expect(r.errors?.[0]?.extensions?.code, query).toBe("INPUT_INVALID");
      expect(r.errors?.[0]?.message).toMatch(message);
    }
    expect(Number((await sql<{ n: string }>`select count(*) as n from triggers`.execute(database.db)).rows[0]!.n)).toBe(9);
  });

  it("resolves waitingFor of 50 deferred steps with one more statement, not one per step", async () => {
    const { rows } = await sql<{ id: string }>`
      insert into runs (status, origin, snapshot_version, plan, steps_total, started_at)
      values ('running', 'manual', 1, '{}'::jsonb, 50, now()) returning id`.execute(database.db);
    const runId = rows[0]!.id;
    await sql`
      insert into steps (run_id, asset_key, partition_key, state, try_number)
      select ${runId}::uuid, 'many/wait', 'p' || lpad(g::text, 3, '0'), 'deferred', 1 from generate_series(1, 50) g`.execute(database.db);
    await sql`
      insert into triggers (kind, args, step_id, next_check_at, timeout_at)
      select 'fileExists', jsonb_build_object('path', '/in/' || partition_key), id, ${LATER}, ${LATER} from steps where run_id = ${runId}::uuid`.execute(
      database.db,
    );
    await sql`update steps set trigger_id = t.id from triggers t where t.step_id = steps.id and steps.run_id = ${runId}::uuid`.execute(
      database.db,
    );

    const counted = countingStatements(database.db);
    const db = counted.db;
    const context = apiServicesOn(db);
    const app = createApiApp({ context, ping: async () => {}, version: "test" });
    const run = async (fields: string) => {
      counted.reset();
      const res = await app.request("/graphql", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query: `query ($id: String!) { run(id: $id) { steps { ${fields} } } }`, variables: { id: runId } }),
      });
      const body = (await res.json()) as GraphQLResult<{ run: { steps: { waitingFor?: { kind: string; args: { path: string } } }[] } }>;
      expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
      return { steps: body.data!.run.steps, statements: counted.statements };
    };
    const without = await run("id state");
    const withTriggers = await run("id state waitingFor { id kind args status attempts timeoutAt }");
    expect(withTriggers.steps).toHaveLength(50);
    expect(withTriggers.steps.every((s) => s.waitingFor?.kind === "fileExists")).toBe(true);
    expect(new Set(withTriggers.steps.map((s) => s.waitingFor!.args.path)).size).toBe(50);
    expect(withTriggers.statements).toBe(without.statements + 1);
  });
});
