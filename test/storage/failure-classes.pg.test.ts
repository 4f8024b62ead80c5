import { runDecisions } from "../../src/planner/index.js";
import { PgRunStore } from "../../src/storage/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { resetDatabase } from "../support/reset.js";
import { failureClassContract } from "./failure-classes.contract.js";

describePostgres("PgRunStore on Postgres", () => {
  const database = useTestDatabase();
  failureClassContract("postgres", async (infrastructure) => {
    await resetDatabase(database.db);
    return { runs: new PgRunStore(database.db, runDecisions(infrastructure)), db: database.db };
  });
});
