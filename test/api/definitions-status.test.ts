import { sql } from "kysely";
import { afterAll, expect, it } from "vitest";
import { Catalog, createApiApp } from "../../src/api/index.js";
import { GraphCache, PgDefinitionStore } from "../../src/storage/index.js";
import { chainSource, storeDefinitions } from "./graphql-fixture.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { apiServicesOn, observabilityOn } from "../support/api-services.js";

// definitionsStatus and /readyz of a server without a loader (`tributary api`): the stored snapshot decides.
describePostgres("definitions status from the stored snapshot", () => {
  const database = useTestDatabase();
  let cleanup: (() => Promise<void>) | undefined;
  afterAll(async () => {
    await cleanup?.();
  });

  it("is LOADING (503 DEFINITIONS_LOADING) until definitions are stored, then LOADED with their version", async () => {
    const app = createApiApp({
      context: apiServicesOn(database.db),
      ping: async () => {
        await sql`select 1`.execute(database.db);
      },
      version: "test",
      observability: observabilityOn(database.db),
    });
    const status = async () => {
      const res = await app.request("/graphql", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query: "{ definitionsStatus { state loadedAt version message } }" }),
      });
      return (
        (await res.json()) as {
          data: { definitionsStatus: { state: string; loadedAt: string | null; version: number | null; message: string | null } };
        }
      ).data.definitionsStatus;
    };

    expect(await status()).toEqual({
      state: "LOADING",
      loadedAt: null,
      version: null,
      message: expect.stringContaining("no definitions are stored"),
    });
    const notReady = await app.request("/readyz");
    expect(notReady.status).toBe(503);
    expect(((await notReady.json()) as { problems: { code: string }[] }).problems.map((p) => p.code)).toEqual(["DEFINITIONS_LOADING"]);

    cleanup = await storeDefinitions(database.db, chainSource(2));
    const loaded = await status();
    expect(loaded).toMatchObject({ state: "LOADED", version: 1, message: null });
    expect(Date.parse(loaded.loadedAt!)).toBeLessThanOrEqual(Date.now());
    expect((await app.request("/readyz")).status).toBe(200);
  });

  it("is FAILED (503 DEFINITIONS_FAILED) with the reason when the load it waits for fails", async () => {
    const definitions = new PgDefinitionStore(database.db);
    const catalog = new Catalog(new GraphCache(definitions, 0), definitions);
    let fail!: (err: Error) => void;
    catalog.waitFor(new Promise((_resolve, reject) => (fail = reject)));
    // The first test stored version 1: it answers while the load runs, as it does while a changed file reloads.
    expect(await catalog.status()).toMatchObject({
      state: "LOADING",
      version: 1,
      message: expect.stringContaining("the definitions stored before (version 1)"),
    });
    expect((await catalog.current()).version).toBe(1);
    fail(new Error("the definitions directory is gone"));
    await catalog.current();
    expect(await catalog.status()).toMatchObject({
      state: "FAILED",
      message: expect.stringContaining("the definitions directory is gone"),
    });
  });
});
