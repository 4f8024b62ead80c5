import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export function registerCheck(program: Command): void {
  program
    .command("check")
    .description("Load and validate the definitions; exit 1 on any error (use it as a pre-merge check)")
    .option("--json", "machine-readable output")
    .option("--types", "also type-check the definitions with the project's TypeScript and tsconfig.json")
    .action(async (opts: { json?: boolean; types?: boolean }, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runCheck } = await import("./check.action.js");
      await runCheck(opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
