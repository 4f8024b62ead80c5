// The API alone on DATABASE_URL, in a child process (test/api/triggers-seed.ts starts it): a real HTTP server, whose
// GraphQL errors keep their codes, without `tributary dev`'s loops, which would change the seeded triggers
// (the observations task cancels the observation triggers of sources that are not in the definitions).
import { serve } from "@hono/node-server";
import { sql } from "kysely";
import { createApiApp } from "../../src/api/index.js";
import { openRuntime } from "../../src/cli/runtime.js";
import { resolveSettings } from "../../src/cli/settings.js";

const runtime = await openRuntime(resolveSettings({ definitions: process.env.DEFINITIONS_DIR ?? "." }));
const app = createApiApp({
  context: runtime.apiContext(),
  version: "test",
  ping: async () => {
    await sql`select 1`.execute(runtime.database.db);
  },
});
const server = serve({ fetch: app.fetch, port: Number(process.env.PORT), hostname: "127.0.0.1" }, () =>
  process.stdout.write("listening\n"),
);
process.once("SIGTERM", () => server.close(() => void runtime.close().then(() => process.exit(0))));
