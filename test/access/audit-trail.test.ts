import { sql } from "kysely";
import { beforeAll, expect, it } from "vitest";
import { auditEntry, hashPassword, newApiToken, RequestAccess, type Caller } from "../../src/access/index.js";
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

  it("lists who acted (their kind, the token used by its prefix and description), filtered by outcome, a page at a time", async () => {
    await access.createPrincipal({ name: "etl", kind: "service" }, local, now);
    const minted = newApiToken();
    const token = await access.createToken(
      { principalName: "etl", tokenHash: minted.hash, prefix: minted.prefix, description: "nightly loads", expiresAt: null },
      local,
      now,
    );
    const etl = (await access.principal("etl"))!;
    const caller: Caller = {
      principalId: etl.id,
      name: "etl",
      kind: "service",
      grants: [],
      via: "api-token",
      tokenId: token.id,
      address: null,
    };
    await access.audit({ ...auditEntry(caller, "reportAssetEvent", { assets: ["shop/orders"] }) }, now);
    await access.audit({ ...auditEntry(caller, "launchRun", {}), outcome: "denied" }, now);
    // A record written before kinds were recorded: the principal's current kind stands in.
    await access.audit({ principalId: etl.id, principalName: "etl", action: "cancelRun", outcome: "denied" }, now);

    const listed = await access.auditEvents({ principalName: "etl", limit: 10 });
    expect(listed.map((e) => [e.action, e.outcome, e.principalKind])).toEqual([
      ["cancelRun", "denied", "service"],
      ["launchRun", "denied", "service"],
      ["reportAssetEvent", "success", "service"],
    ]);
    expect(listed[1]!.token).toEqual({ id: token.id, prefix: minted.prefix, description: "nightly loads" });
    expect(listed[0]!.token).toBeNull();
    expect((await access.auditEvents({ principalName: "local", action: "setup", limit: 1 }))[0]?.principalKind).toBe("local");

    const denied = await access.auditEvents({ principalName: "etl", outcome: "denied", limit: 1 });
    expect(denied.map((e) => e.action)).toEqual(["cancelRun"]);
    const older = await access.auditEvents({ principalName: "etl", outcome: "denied", beforeId: denied[0]!.id, limit: 10 });
    expect(older.map((e) => e.action)).toEqual(["launchRun"]);
  });

  it("cannot be edited: the database refuses updates of audit records", async () => {
    await expect(sql`update audit_events set outcome = 'success'`.execute(database.db)).rejects.toThrow(/append-only/);
  });
});
