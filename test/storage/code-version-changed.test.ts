// codeVersionChanged(): the partitions whose latest materialisation ran another code version than the asset's
// current one, read through partition_status_code_version_idx in proportion to how many differ.
import { sql, type Kysely } from "kysely";
import { beforeEach, describe, expect, it } from "vitest";
import { PgAutomationStore, type Database } from "../../src/storage/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { useTestPglite } from "../support/pglite.js";

interface Row {
  readonly asset: string;
  readonly partition: string;
  readonly codeVersion: string | null;
  /** Whether the row records a materialisation (a failure before any has none). */
  readonly materialized?: boolean;
  readonly status?: string;
}

function codeVersionSuite(database: { readonly db: Kysely<Database> }): void {
  let store: PgAutomationStore;
  beforeEach(async () => {
    store = new PgAutomationStore(database.db);
    await sql`truncate partition_status, partition_status_changes, event_inputs, events cascade`.execute(database.db);
  });

  async function record(rows: readonly Row[]): Promise<void> {
    for (const r of rows) {
      const materialized = r.materialized ?? true;
      const eventId = materialized
        ? Number(
            (
              await sql<{ id: string }>`insert into events (kind, asset_key, partition_key, code_version)
                values ('materialization', ${r.asset}, ${r.partition}, ${r.codeVersion}) returning id`.execute(database.db)
            ).rows[0]!.id,
          )
        : null;
      await sql`insert into partition_status (asset_key, partition_key, status, last_materialization_event_id, code_version)
        values (${r.asset}, ${r.partition}, ${r.status ?? (materialized ? "materialized" : "failed")}, ${eventId}, ${r.codeVersion})`.execute(
        database.db,
      );
    }
  }

  const sorted = (m: Map<string, string[]>) => new Map([...m].map(([k, v]) => [k, [...v].sort()]));

  it("names the partitions of each asset materialised with a code version other than its current one, on either side of it", async () => {
    await record([
      { asset: "a", partition: "p1", codeVersion: "v1" },
      { asset: "a", partition: "p2", codeVersion: "v2" },
      { asset: "a", partition: "p3", codeVersion: "v3" },
      { asset: "a", partition: "p4", codeVersion: null },
      { asset: "a", partition: "p5", codeVersion: "v1", status: "failed" },
      { asset: "b", partition: "", codeVersion: "x" },
      { asset: "c", partition: "q1", codeVersion: "v1" },
    ]);
    const changed = await store.codeVersionChanged([
      { assetKey: "a", codeVersion: "v2" },
      { assetKey: "b", codeVersion: "y" },
      { assetKey: "c", codeVersion: "v1" },
    ]);
    // p4 ran without a code version (nothing to compare); p5 failed after a materialisation with v1: its data is v1's.
    expect(sorted(changed)).toEqual(
      new Map([
        ["a", ["p1", "p3", "p5"]],
        ["b", [""]],
      ]),
    );
  });

  it("leaves out partitions never materialised, assets not asked about, and answers nothing for no assets", async () => {
    await record([
      { asset: "a", partition: "p1", codeVersion: "v1", materialized: false },
      { asset: "d", partition: "p1", codeVersion: "v1" },
    ]);
    expect(await store.codeVersionChanged([{ assetKey: "a", codeVersion: "v2" }])).toEqual(new Map());
    expect(await store.codeVersionChanged([])).toEqual(new Map());
  });

  it("follows a new materialisation: the partition leaves once it is written with the current code version", async () => {
    await record([
      { asset: "a", partition: "p1", codeVersion: "v1" },
      { asset: "a", partition: "p2", codeVersion: "v1" },
    ]);
    expect(sorted(await store.codeVersionChanged([{ assetKey: "a", codeVersion: "v2" }]))).toEqual(new Map([["a", ["p1", "p2"]]]));
    await sql`update partition_status set code_version = 'v2' where asset_key = 'a' and partition_key = 'p1'`.execute(database.db);
    expect(await store.codeVersionChanged([{ assetKey: "a", codeVersion: "v2" }])).toEqual(new Map([["a", ["p2"]]]));
  });
}

describePostgres("codeVersionChanged (Postgres)", () => {
  const database = useTestDatabase();
  codeVersionSuite(database);

  it("reads the partitions that differ through the index, not the asset's every row", async () => {
    // A table this small is read whole whatever the indexes; without sequential scans the plan shows what is usable.
    const plan = await database.db.transaction().execute(async (trx) => {
      await sql`set local enable_seqscan = off`.execute(trx);
      const { rows } = await sql<{ "QUERY PLAN": string }>`explain
        select ps.partition_key from partition_status ps
        where ps.asset_key = 'a' and (ps.code_version < 'v2' or ps.code_version > 'v2')`.execute(trx);
      return rows.map((r) => r["QUERY PLAN"]).join("\n");
    });
    expect(plan).toContain("partition_status_code_version_idx");
    expect(plan).not.toContain("partition_status_pkey");
  });
});

describe("codeVersionChanged (PGlite)", () => {
  codeVersionSuite(useTestPglite());
});
