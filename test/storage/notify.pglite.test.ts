import { afterAll, beforeAll, describe } from "vitest";
import type { PgliteHandle } from "../../src/storage/index.js";
import { openTestPglite } from "../support/pglite.js";
import { notifyContract } from "./notify.contract.js";

describe("PGlite notifications", () => {
  let handle: PgliteHandle;
  beforeAll(async () => {
    handle = await openTestPglite();
  });
  afterAll(async () => {
    await handle.close();
  });
  notifyContract("pglite", () => handle);
});
