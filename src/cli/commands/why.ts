import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export interface WhyOptions {
  partition?: string;
  limit: string;
  json?: boolean;
}

export function registerWhy(program: Command): void {
  program
    .command("why <asset-key>")
    .description("Why did (or didn't) automation run an asset: its condition, and the latest decisions with their reasons")
    .option("--partition <key>", "only the decisions that concern this partition")
    .option("--limit <n>", "how many decisions, newest first (1-200)", "10")
    .option("--json", "machine-readable output")
    .action(async (key: string, opts: WhyOptions, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runWhy } = await import("./why.action.js");
      await runWhy(key, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
