import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openDatabase, openPostgres, type PostgresHandle } from "../../src/storage/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { notifyContract, waitFor } from "./notify.contract.js";

describePostgres("Postgres connections", () => {
  const database = useTestDatabase();
  let handle: PostgresHandle;
  const connectionErrors: Error[] = [];
  beforeAll(async () => {
    handle = await openPostgres({
      kind: "postgres",
      url: database.url,
      applicationName: "tributary-chaos-test",
      onConnectionError: (error) => connectionErrors.push(error),
    });
  });
  afterAll(async () => {
    await handle?.close();
  });

  /** Kills this handle's sessions, like a server restart or a proxy dropping them. */
  async function killSessions(filter: "pool" | "listener"): Promise<number> {
    const appName = filter === "pool" ? "tributary-chaos-test" : "tributary-chaos-test-listener";
    const { rows } = await sql<{ killed: boolean }>`
      select pg_terminate_backend(pid) as killed from pg_stat_activity
      where datname = current_database() and application_name = ${appName}`.execute(database.db);
    return rows.length;
  }

  notifyContract("postgres", () => handle);

  it("recovers pooled connections killed by the server", async () => {
    await Promise.all(Array.from({ length: 4 }, () => sql`select pg_sleep(0.02)`.execute(handle.db)));
    const killed = await killSessions("pool");
    expect(killed).toBeGreaterThan(0);
    // An idle connection is dropped once the client reads the server's goodbye;
    // a query racing that read fails once (callers retry on their next pass).
    await waitFor(() => connectionErrors.length >= killed, "the pool to drop every killed connection");
    for (let i = 0; i < 5; i++) {
      const { rows } = await sql<{ n: number }>`select ${i}::int as n`.execute(handle.db);
      expect(rows).toEqual([{ n: i }]);
    }
  });

  it("re-listens after the LISTEN connection is killed", async () => {
    const got: string[] = [];
    const unlisten = await handle.listen("tributary_reconnect", (p) => got.push(p));
    try {
      const before = handle.listener.backendPid;
      expect(await killSessions("listener")).toBe(1);
      await waitFor(() => handle.listener.backendPid !== undefined && handle.listener.backendPid !== before, "reconnect");
      await handle.notify("tributary_reconnect", "after");
      await waitFor(() => got.includes("after"), "a notification after reconnecting");
    } finally {
      await unlisten();
    }
  });

  it("fails fast with a clear error when the server is unreachable", async () => {
    await expect(openDatabase({ kind: "postgres", url: "postgres://nobody:secret@127.0.0.1:1/none" })).rejects.toMatchObject({
      code: "DATABASE_UNREACHABLE",
      message: expect.stringMatching(/cannot connect to Postgres at postgres:\/\/nobody:\*\*\*@127\.0\.0\.1:1\/none/),
    });
  });
});
