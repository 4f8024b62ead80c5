import { sql } from "kysely";
import { beforeAll, expect, it } from "vitest";
import { auditEntry, hashPassword, RequestAccess, type Caller } from "../../src/access/index.js";
import { AccessDeniedError } from "../../src/errors/index.js";
import { PgAccessStore, PgPoolStore } from "../../src/storage/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";

describePostgres("the audit trail", () => {
  const database = useTestDatabase();
  let access: PgAccessStore;
  const now = new Date("2026-03-01T10:00:00Z");
  const local = auditEntry(
    { principalId: null, name: "local", kind: "local", grants: [], via: "local", tokenId: null, address: null },
    "setup",
    {},
  );

  beforeAll(async () => {
    access = new PgAccessStore(database.db);
    await access.createPrincipal({ name: "ops", kind: "user", passwordHash: await hashPassword("correct horse") }, local, now);
    await access.grant({ principalName: "ops", role: "operator", team: null }, local, now);
  });

  const count = async () => Number((await sql<{ n: string }>`select count(*) as n from audit_events`.execute(database.db)).rows[0]!.n);

  it("writes the record of a change in the change's transaction: a change that fails leaves neither", async () => {
    const pools = new PgPoolStore(database.db);
    const before = await count();
    await pools.setSlots({ name: "warehouse", slots: 4 }, now, { ...local, action: "setPoolSlots" });
    expect(await count()).toBe(before + 1);
    // slots = -1 breaks the pools table's check: the statement fails, and the record goes with it.
    await expect(pools.setSlots({ name: "warehouse", slots: -1 }, now, { ...local, action: "setPoolSlots" })).rejects.toThrow();
    expect(await count()).toBe(before + 1);
    expect((await pools.list()).find((p) => p.name === "warehouse")?.slots).toBe(4);
  });

  it("records a refusal as denied and an authorised change that then fails as failed, nothing else", async () => {
    const ops = (await access.principal("ops"))!;
    const caller: Caller = {
      principalId: ops.id,
      name: "ops",
      kind: "user",
      grants: ops.grants,
      via: "api-token",
      tokenId: null,
      address: "10.0.0.9",
    };
    const guard = new RequestAccess(caller, {
      teams: () => access.listTeams(),
      ownership: (keys) => Promise.resolve(keys.map((key) => ({ key, group: "shop", owner: null }))),
      record: (entry) => access.audit(entry, now),
    });
    await expect(guard.authorize("setPoolSlots", "admin", { assets: null })).rejects.toBeInstanceOf(AccessDeniedError);
    await expect(
      guard.audited(async () => {
        await guard.authorize("launchRun", "operator", { assets: ["shop/orders"], partitions: ["2026-02-28"] });
        throw new Error("the plan could not be stored");
      }),
    ).rejects.toThrow("could not be stored");
    const [failed, denied] = await access.auditEvents({ principalName: "ops", limit: 2 });
    expect(denied).toMatchObject({ action: "setPoolSlots", outcome: "denied", address: "10.0.0.9", detail: { missingRole: "admin" } });
    expect(failed).toMatchObject({
      action: "launchRun",
      outcome: "failed",
      assets: ["shop/orders"],
      partitions: ["2026-02-28"],
      detail: { error: "INTERNAL" },
    });
  });

  it("cannot be edited: the database refuses updates of audit records", async () => {
    await expect(sql`update audit_events set outcome = 'success'`.execute(database.db)).rejects.toThrow(/append-only/);
  });
});
