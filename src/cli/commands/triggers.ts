import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export interface TriggersOptions {
  status?: string;
  asset?: string;
  kind?: string;
  limit: string;
  json?: boolean;
}

export function registerTriggers(program: Command): void {
  program
    .command("triggers")
    .description("What deferred steps and source assets wait for: triggers (waiting first) and their last check")
    .option("--status <status>", "only triggers in this status (waiting, fired, failed, timed_out, canceled)")
    .option("--asset <key>", "only triggers of this asset (a deferred step's asset or an observed source asset)")
    .option("--kind <kind>", "only triggers of this kind, e.g. fileExists")
    .option("--limit <n>", "how many (1-500)", "50")
    .option("--json", "machine-readable output")
    .action(async (opts: TriggersOptions, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runTriggers } = await import("./triggers.action.js");
      await runTriggers(opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
