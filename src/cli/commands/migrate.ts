import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export function registerMigrate(program: Command): void {
  program
    .command("migrate")
    .description("Apply database migrations (safe to run twice, or from two processes at once)")
    .option("--json", "machine-readable output")
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runMigrate } = await import("./migrate.action.js");
      await runMigrate(opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
