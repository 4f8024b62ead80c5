import { afterAll, beforeAll, describe } from "vitest";
import { runDecisions } from "../../src/planner/index.js";
import { PgRunStore, type PgliteHandle } from "../../src/storage/index.js";
import { openTestPglite } from "../support/pglite.js";
import { resetDatabase } from "../support/reset.js";
import { failureClassContract } from "./failure-classes.contract.js";

describe("PgRunStore on PGlite", () => {
  let handle: PgliteHandle;
  beforeAll(async () => {
    handle = await openTestPglite();
  });
  afterAll(async () => {
    await handle.close();
  });
  failureClassContract("pglite", async (infrastructure) => {
    await resetDatabase(handle.db);
    return { runs: new PgRunStore(handle.db, runDecisions(infrastructure)), db: handle.db };
  });
});
