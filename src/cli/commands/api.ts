import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

/** Options of `tributary api`, as commander parses them. */
export interface ApiCommandOptions {
  port: string;
  host: string;
  insecureNoAuth?: boolean;
}

/** `tributary api`: the HTTP server alone (the production split: api, reconciler, triggerer, worker). */
export function registerApi(program: Command): void {
  program
    .command("api")
    .description(
      "Serve the HTTP API alone (GraphQL, /api/v1, /metrics, /readyz, step logs, UI) over the database; " +
        "run reconcilers and triggerers as their own processes (use DATABASE_URL for Postgres)",
    )
    .option("--port <port>", "HTTP port", "3000")
    .option("--host <host>", "HTTP host", "127.0.0.1")
    .option("--insecure-no-auth", "serve without access control: every request may do everything (never on a shared network)")
    .action(async (opts: ApiCommandOptions, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runApi } = await import("./api.action.js");
      await runApi(opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
