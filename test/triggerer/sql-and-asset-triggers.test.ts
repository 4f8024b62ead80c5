import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { assetMaterialized, sqlReturnsRows } from "../../src/sdk/index.js";
import { PgEventStore } from "../../src/storage/index.js";
import {
  builtInTriggers,
  checkTrigger,
  envSqlConnections,
  pgMaterializedLookup,
  SQL_PAYLOAD_ROWS,
  TriggerError,
} from "../../src/trigger-checks/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";

const now = new Date();

describePostgres("sqlReturnsRows and assetMaterialized on the real Postgres", () => {
  const database = useTestDatabase();
  let pool: pg.Pool;

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    await pool.query("create table partner_loads (day date primary key, rows_loaded bigint not null, loaded_at timestamptz not null)");
  });
  afterAll(async () => {
    await pool.end();
  });

  const registry = () =>
    builtInTriggers({
      connections: (name) => (name === "warehouse" ? pool : undefined),
      materialized: pgMaterializedLookup(database.db),
    });

  it("sqlReturnsRows reads its connections from TRIBUTARY_CONNECTION_<NAME>, and names the variable to set for an unknown one", async () => {
    const env = envSqlConnections({ TRIBUTARY_CONNECTION_PARTNER_DB: database.url });
    try {
      const registry = builtInTriggers({ connections: env.connections });
      const fired = await checkTrigger(sqlReturnsRows("partner-db", "select 1 as one"), { now }, { timeoutMs: 10_000, registry });
      expect(fired).toEqual({ fired: true, payload: { rowCount: 1, rows: [{ one: 1 }] } });
      const unknown = await checkTrigger(sqlReturnsRows("billing", "select 1"), { now }, { timeoutMs: 10_000, registry }).catch(
        (e: unknown) => e,
      );
      expect(unknown).toBeInstanceOf(TriggerError);
      expect((unknown as TriggerError).code).toBe("TRIGGER_CONNECTION_UNKNOWN");
      expect((unknown as TriggerError).message).toContain("set TRIBUTARY_CONNECTION_BILLING to its Postgres URL");
    } finally {
      await env.close();
    }
  });

  it("sqlReturnsRows waits for rows, then fires with the first rows as JSON", async () => {
    const spec = sqlReturnsRows("warehouse", "select day, rows_loaded, loaded_at from partner_loads order by day");
    expect(await checkTrigger(spec, { now }, { timeoutMs: 10_000, registry: registry() })).toEqual({
      fired: false,
      detail: "the query returned no rows",
    });
    await pool.query(
      `insert into partner_loads select d::date, 9007199254740993, '2025-03-15T06:00:00Z' from generate_series('2025-01-01'::date, '2025-01-20', '1 day') d`,
    );
    const result = await checkTrigger(spec, { now }, { timeoutMs: 10_000, registry: registry() });
    if (!result.fired) throw new Error(`expected to fire: ${result.detail}`);
    const payload = result.payload as { rowCount: number; rows: Array<Record<string, unknown>> };
    expect(payload.rowCount).toBe(20);
    expect(payload.rows).toHaveLength(SQL_PAYLOAD_ROWS);
    expect(payload.rows[0]).toEqual({ day: expect.any(String), rows_loaded: "9007199254740993", loaded_at: "2025-03-15T06:00:00.000Z" });
  });

  it("sqlReturnsRows fails clearly for an unknown connection and for bad SQL", async () => {
    const unknown = await checkTrigger(sqlReturnsRows("lake", "select 1"), { now }, { timeoutMs: 10_000, registry: registry() }).catch(
      (e: unknown) => e,
    );
    expect((unknown as TriggerError).code).toBe("TRIGGER_CONNECTION_UNKNOWN");
    expect((unknown as TriggerError).message).toContain('"lake"');
    const bad = await checkTrigger(
      sqlReturnsRows("warehouse", "select from nowhere_at_all"),
      { now },
      { timeoutMs: 10_000, registry: registry() },
    ).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(TriggerError);
    expect((bad as TriggerError).code).toBe("TRIGGER_CHECK_FAILED");
    expect((bad as TriggerError).message).toContain("nowhere_at_all");
  });

  it("assetMaterialized fires once the partition has a materialisation event", async () => {
    const spec = assetMaterialized("partner/orders");
    const partition = { key: "2025-03-15" };
    expect(await checkTrigger(spec, { partition, now }, { timeoutMs: 10_000, registry: registry() })).toMatchObject({ fired: false });

    const [eventId] = await new PgEventStore(database.db).reportEvents(
      [{ assetKey: "partner/orders", partitionKey: "2025-03-15", kind: "external", metadata: {} }],
      now,
    );
    expect(await checkTrigger(spec, { partition, now }, { timeoutMs: 10_000, registry: registry() })).toEqual({
      fired: true,
      payload: { assetKey: "partner/orders", partition: "2025-03-15", eventId },
    });
    // Another partition of the same asset is still missing.
    expect((await checkTrigger(spec, { partition: { key: "2025-03-16" }, now }, { timeoutMs: 10_000, registry: registry() })).fired).toBe(
      false,
    );
  });

  it("assetMaterialized between unpartitioned assets reads the '' partition", async () => {
    const spec = assetMaterialized("reference/fx_rates");
    expect((await checkTrigger(spec, { now }, { timeoutMs: 10_000, registry: registry() })).fired).toBe(false);
    await new PgEventStore(database.db).reportEvents(
      [{ assetKey: "reference/fx_rates", partitionKey: "", kind: "external", metadata: {} }],
      now,
    );
    expect((await checkTrigger(spec, { now }, { timeoutMs: 10_000, registry: registry() })).fired).toBe(true);
  });

  it("assetMaterialized without a lookup fails with what to configure", async () => {
    const err = await checkTrigger(
      assetMaterialized("a"),
      { partition: { key: "k" }, now },
      { timeoutMs: 10_000, registry: builtInTriggers() },
    ).catch((e: unknown) => e);
    expect((err as TriggerError).code).toBe("TRIGGER_SERVICE_MISSING");
    expect((err as TriggerError).message).toContain("pgMaterializedLookup");
  });
});
