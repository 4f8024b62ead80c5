import { Kysely, PostgresDialect, sql, type CompiledQuery, type Transaction } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Database } from "../../src/storage/index.js";
import { selectCandidates } from "../../src/storage/runs/sql/claim-runnable.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";

// The claim finds the steps it picked by primary key (or, in a small table, in one pass) whatever the statistics say. Taken before a large run was
// created, they have the planner believe the partial indexes on scheduled steps nearly empty; given a bare
// `state = 'scheduled'` test, it then read one of them whole once for every id.

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  Alias?: string;
  "Index Name"?: string;
  Plans?: PlanNode[];
}

function nodesOf(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodesOf)];
}

describePostgres("storage: the claim's statements under stale statistics", () => {
  const database = useTestDatabase();
  let pool: pg.Pool;
  let db: Kysely<Database>;
  const queries: CompiledQuery[] = [];
  const SCHEDULED = 3_000;

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    db = new Kysely<Database>({
      dialect: new PostgresDialect({ pool }),
      log: (event) => {
        if (event.level === "query") queries.push(event.query);
      },
    });
    const [run] = (
      await sql<{ id: string }>`
        insert into runs (origin, snapshot_version, plan, status) values ('manual', 1, '{}', 'running') returning id`.execute(db)
    ).rows;
    // Statistics of a quiet day: a few finished steps, none scheduled.
    await sql`
      insert into steps (run_id, asset_key, partition_key, state)
      select ${run!.id}::uuid, 'plan/a', 'done-' || i, 'success' from generate_series(1, 50) i`.execute(db);
    await sql`analyze steps`.execute(db);
    // Then a large run's steps, all runnable at once.
    await sql`
      insert into steps (run_id, asset_key, partition_key, state, scheduled_at)
      select ${run!.id}::uuid, 'plan/a', 'p-' || i, 'scheduled', now() from generate_series(1, ${SCHEDULED}::int) i`.execute(db);
  });

  afterAll(async () => {
    await db?.destroy();
  });

  /** The plan of the last statement run through `run`, with its parameters. */
  async function planOf(run: (trx: Transaction<Database>) => Promise<unknown>): Promise<PlanNode[]> {
    let last: CompiledQuery | undefined;
    await db
      .transaction()
      .execute(async (trx) => {
        await run(trx);
        last = queries.at(-1);
        // Nothing is kept: the plans are asked of the rows as they were.
        throw new Rollback();
      })
      .catch((err: unknown) => {
        if (!(err instanceof Rollback)) throw err;
      });
    if (!last) throw new Error("the statement ran no query");
    const { rows } = await pool.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(`explain (format json) ${last.sql}`, [...last.parameters]);
    return nodesOf(rows[0]!["QUERY PLAN"][0].Plan);
  }

  /** The picked steps (alias s) are read by primary key or, the table being small, in one pass; never by a scheduled index. */
  function expectLookup(nodes: readonly PlanNode[]): void {
    const lookup = nodes.filter((n) => n["Relation Name"] === "steps" && n.Alias === "s");
    expect(lookup).toHaveLength(1);
    expect(lookup[0]!["Index Name"] ?? lookup[0]!["Node Type"]).toMatch(/^(steps_pkey|Seq Scan)$/);
  }

  it("picks candidates among thousands of scheduled steps without reading a scheduled index per id", async () => {
    const nodes = await planOf((trx) => selectCandidates(trx, { kindNames: ["local"], limit: 500, agingLimit: 50 }));
    expectLookup(nodes);
  });

  it("takes the steps a completion names without reading a scheduled index per id", async () => {
    const { rows } = await sql<{ id: string }>`select id from steps where state = 'scheduled' order by id limit 200`.execute(db);
    const ids = rows.map((r) => Number(r.id));
    const nodes = await planOf((trx) => selectCandidates(trx, { kindNames: ["local"], limit: 200, agingLimit: 0, onlyIds: ids }));
    expectLookup(nodes);
  });
});

class Rollback extends Error {}
