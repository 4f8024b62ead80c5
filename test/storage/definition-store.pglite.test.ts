import { afterAll, beforeAll, describe } from "vitest";
import { PgDefinitionStore, type PgliteHandle } from "../../src/storage/index.js";
import { openTestPglite } from "../support/pglite.js";
import { resetDatabase } from "../support/reset.js";
import { definitionStoreContract } from "./definition-store.contract.js";

describe("PgDefinitionStore on PGlite", () => {
  let handle: PgliteHandle;
  beforeAll(async () => {
    handle = await openTestPglite();
  });
  afterAll(async () => {
    await handle.close();
  });
  definitionStoreContract("pglite", async () => {
    await resetDatabase(handle.db);
    return { store: new PgDefinitionStore(handle.db), db: handle.db };
  });
});
