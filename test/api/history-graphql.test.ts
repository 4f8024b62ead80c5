import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { newApiToken } from "../../src/access/index.js";
import { createApiApp } from "../../src/api/index.js";
import { HistoryArchiveTask } from "../../src/reconciler/index.js";
import { PgHistoryArchiveStore } from "../../src/storage/index.js";
import { Harness } from "../execution/harness.js";
import { seedAccess } from "../support/access-seed.js";
import { apiServicesOn, graphqlWithToken, type GraphQLAnswer } from "../support/api-services.js";
import { describePostgres } from "../support/pg.js";

// Archived history through GraphQL on a server that controls access: historyArchives for a viewer, restoreHistory
// for an admin only (an operator is refused, and the refusal audited), a bad day refused naming the field.

const DEFS = `
import { asset, staticPartitions } from "tributary";
export const thing = asset({ key: "hg/thing", partitions: staticPartitions(["a", "b"]) }, async (ctx) => ctx.partition.key);
`;

const ADMIN = newApiToken();
const OPERATOR = newApiToken();
const DAY = 86_400_000;

describePostgres("archived history through GraphQL", () => {
  let h: Harness;
  let app: ReturnType<typeof createApiApp>;
  const ask = <T>(token: string, query: string, variables: Record<string, unknown> = {}) =>
    graphqlWithToken<T>(app, token, query, variables);
  const restore = (token: string, input: Record<string, unknown>) =>
    ask<{ restoreHistory: { day: string; archives: number; heldUntil: string; rows: Record<string, number> } | null }>(
      token,
      `mutation ($input: RestoreHistoryInput!) {
        restoreHistory(input: $input) { day archives heldUntil rows { runs steps stepDeps stepTries triggers events eventInputs checkResults } }
      }`,
      { input },
    );
  const days = (token: string) =>
    ask<{ historyArchives: { day: string; archives: number; runs: number; restoredArchives: number; heldUntil: string | null }[] }>(
      token,
      `{ historyArchives { day archives runs events rows logs sizeBytes lastArchivedAt restoredArchives lastRestoredAt heldUntil } }`,
    );
  const codeOf = (answer: GraphQLAnswer<unknown>) => answer.errors?.[0]?.extensions?.code;

  beforeAll(async () => {
    h = await Harness.create({ files: { "hg.ts": DEFS } });
    for (let i = 0; i < 2; i++) {
      const run = await h.waitForRun(await h.launch(["hg/thing"], { from: "a", to: "b" }), 60_000);
      expect(run.status, await h.describe([run.id])).toBe("success");
    }
    await sql`update runs set created_at = '2025-05-05T12:00:00Z', ended_at = '2025-05-05T12:01:00Z'`.execute(h.db);
    const pass = await new HistoryArchiveTask({
      store: new PgHistoryArchiveStore(h.db),
      outputStore: h.outputStore,
      logsDir: h.logsDir,
      retentionMs: 30 * DAY,
      graphs: h.graphs,
    }).archive();
    expect(pass.runs).toBe(2);
    await seedAccess(h.db, {
      users: [
        { name: "ada", token: ADMIN, grants: [{ role: "admin", team: null }] },
        { name: "otto", token: OPERATOR, grants: [{ role: "operator", team: null }] },
      ],
    });
    const context = apiServicesOn(h.db, {
      definitions: h.definitions,
      graphs: h.graphs,
      outputStore: h.outputStore,
      logsDir: h.logsDir,
      openAccess: false,
    });
    app = createApiApp({ context, ping: async () => {}, version: "test" });
  }, 180_000);

  afterAll(() => h?.stop());

  it("lists the archived days, refuses an operator's restore (audited) and a bad day, and restores for an admin", async () => {
    const listed = await days(OPERATOR.token);
    expect(listed.errors).toBeUndefined();
    expect(listed.data!.historyArchives).toEqual([
      expect.objectContaining({ day: "2025-05-05", archives: 1, runs: 2, restoredArchives: 0 }),
    ]);

    const refused = await restore(OPERATOR.token, { day: "2025-05-05" });
    expect(codeOf(refused)).toBe("FORBIDDEN");
    expect(refused.errors![0]!.message).toContain("needs the admin role");
    const audit = await sql<{ outcome: string }>`
      select outcome from audit_events where action = 'restoreHistory' order by id`.execute(h.db);
    expect(audit.rows.map((r) => r.outcome)).toEqual(["denied"]);

    const bad = await restore(ADMIN.token, { day: "2025-5-5" });
    expect(codeOf(bad)).toBe("HISTORY_DAY_INVALID");
    expect(bad.errors![0]!.message).toContain('"2025-5-5" is not a day');

    const done = await restore(ADMIN.token, { day: "2025-05-05", hold: "1d" });
    expect(done.errors).toBeUndefined();
    expect(done.data!.restoreHistory).toMatchObject({ day: "2025-05-05", archives: 1, rows: { runs: 2, steps: 4, stepTries: 4 } });
    expect(new Date(done.data!.restoreHistory!.heldUntil).getTime()).toBeGreaterThan(Date.now() + DAY / 2);
    expect((await sql<{ n: number }>`select count(*)::int as n from runs`.execute(h.db)).rows[0]!.n).toBe(2);
    const after = await sql<{ outcome: string; detail: { day?: string } }>`
      select outcome, detail from audit_events where action = 'restoreHistory' order by id`.execute(h.db);
    expect(after.rows.map((r) => [r.outcome, r.detail.day])).toEqual([
      ["denied", "2025-05-05"],
      ["success", "2025-05-05"],
    ]);
    expect((await days(ADMIN.token)).data!.historyArchives[0]).toMatchObject({ archives: 0, restoredArchives: 1 });
  });
});
