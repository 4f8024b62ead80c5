import { afterAll, beforeAll, describe } from "vitest";
import type { PgliteHandle } from "../../src/storage/index.js";
import { openTestPglite } from "../support/pglite.js";
import { resetDatabase } from "../support/reset.js";
import { eventStreamContract } from "./event-stream.contract.js";

describe("the event stream on PGlite", () => {
  let handle: PgliteHandle;
  beforeAll(async () => {
    handle = await openTestPglite();
  });
  afterAll(async () => {
    await handle.close();
  });
  eventStreamContract("pglite", async () => {
    await resetDatabase(handle.db);
    return { db: handle.db };
  });
});
