import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AbortedTransactionError } from "kysely";
import type { PgliteHandle } from "../../src/storage/index.js";
import { openTestPglite } from "../support/pglite.js";
import { resetDatabase } from "../support/reset.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("PGlite dialect", () => {
  let handle: PgliteHandle;
  beforeAll(async () => {
    handle = await openTestPglite({ sessionWaitTimeoutMs: 2000 });
  });
  afterAll(async () => {
    await handle.close();
  });
  beforeEach(async () => {
    await resetDatabase(handle.db);
  });

  const keys = async () => (await handle.db.selectFrom("cursors").select("name").orderBy("name").execute()).map((r) => r.name);
  const insert = (db: PgliteHandle["db"], name: string) =>
    db
      .insertInto("cursors")
      .values({ name, value: sql`'0'::jsonb` })
      .execute();

  it("keeps overlapping transactions apart: a rollback never leaks into a concurrent commit", async () => {
    const rolledBack = handle.db.transaction().execute(async (trx) => {
      await insert(trx, "rolled-back");
      await sleep(50); // the other transaction is waiting for the session now
      throw new Error("boom");
    });
    const committed = (async () => {
      await sleep(10);
      await handle.db.transaction().execute((trx) => insert(trx, "committed"));
    })();
    const [a, b] = await Promise.allSettled([rolledBack, committed]);
    expect(a.status).toBe("rejected");
    expect(b.status).toBe("fulfilled");
    expect(await keys()).toEqual(["committed"]);
  });

  it("keeps them apart the other way round: the first commits, the second rolls back", async () => {
    const first = handle.db.transaction().execute(async (trx) => {
      await insert(trx, "first");
      await sleep(30);
    });
    const second = (async () => {
      await sleep(5);
      await handle.db.transaction().execute(async (trx) => {
        await insert(trx, "second");
        throw new Error("undo");
      });
    })();
    const results = await Promise.allSettled([first, second]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected"]);
    expect(await keys()).toEqual(["first"]);
  });

  it("makes a query outside a transaction wait for it, and see only committed rows", async () => {
    const events: string[] = [];
    const trx = handle.db.transaction().execute(async (t) => {
      await insert(t, "in-trx");
      await sleep(40);
      events.push("trx-done");
    });
    await sleep(5);
    const seen = await keys();
    events.push("outside-read");
    await trx;
    expect(events).toEqual(["trx-done", "outside-read"]);
    expect(seen).toEqual(["in-trx"]);
  });

  it("returns affected row counts as bigint", async () => {
    const inserted = await handle.db
      .insertInto("cursors")
      .values([
        { name: "a", value: sql`'1'::jsonb` },
        { name: "b", value: sql`'2'::jsonb` },
      ])
      .executeTakeFirst();
    expect(inserted.numInsertedOrUpdatedRows).toBe(2n);
    const updated = await handle.db
      .updateTable("cursors")
      .set({ value: sql`'3'::jsonb` })
      .executeTakeFirst();
    expect(updated.numUpdatedRows).toBe(2n);
    const deleted = await handle.db.deleteFrom("cursors").where("name", "=", "a").executeTakeFirst();
    expect(deleted.numDeletedRows).toBe(1n);
  });

  it("runs parameterless multi-statement SQL like pg's simple protocol", async () => {
    const { rows } = await sql<{ n: number }>`
      insert into cursors (name, value) values ('x', '1');
      insert into cursors (name, value) values ('y', '2');
      select count(*)::int as n from cursors`.execute(handle.db);
    expect(rows).toEqual([{ n: 2 }]);
  });

  it("supports savepoints in controlled transactions", async () => {
    const trx = await handle.db.startTransaction().execute();
    await insert(trx, "kept");
    const sp = await trx.savepoint("before_undo").execute();
    await insert(sp, "undone");
    await sp.rollbackToSavepoint("before_undo").execute();
    await trx.commit().execute();
    expect(await keys()).toEqual(["kept"]);
  });

  it("reports a commit of an aborted transaction as an error", async () => {
    const trx = await handle.db.startTransaction().execute();
    await insert(trx, "dup");
    await expect(insert(trx, "dup")).rejects.toMatchObject({ code: "23505" });
    await expect(trx.commit().execute()).rejects.toBeInstanceOf(AbortedTransactionError);
    expect(await keys()).toEqual([]);
  });

  it("turns a transaction that queries through db instead of trx into an error, not a hang", async () => {
    const result = handle.db.transaction().execute(async (trx) => {
      await insert(trx, "inner");
      await handle.db.selectFrom("cursors").selectAll().execute(); // needs the session trx holds
    });
    await expect(result).rejects.toMatchObject({ code: "PGLITE_SESSION_TIMEOUT" });
    expect(await keys()).toEqual([]);
  });

  it("rolls back a transaction a connection left open before the next user gets the session", async () => {
    await handle.db.connection().execute(async (conn) => {
      await sql`begin`.execute(conn);
      await insert(conn, "abandoned");
    });
    expect(await keys()).toEqual([]);
    await insert(handle.db, "later");
    expect(await keys()).toEqual(["later"]);
  });

  it("rejects queries after close", async () => {
    const other = await openTestPglite();
    await other.close();
    await other.close(); // idempotent
    await expect(other.db.selectFrom("cursors").selectAll().execute()).rejects.toThrow(/destroyed/);
  });
});
