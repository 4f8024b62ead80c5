import { PgDefinitionStore } from "../../src/storage/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { resetDatabase } from "../support/reset.js";
import { definitionStoreContract } from "./definition-store.contract.js";

describePostgres("PgDefinitionStore on Postgres", () => {
  const database = useTestDatabase();
  definitionStoreContract("postgres", async () => {
    await resetDatabase(database.db);
    return { store: new PgDefinitionStore(database.db), db: database.db };
  });
});
