import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";
import { collectDim, DIM_FLAGS, DIM_HELP } from "./dimension-option.js";

export interface PartitionsOptions {
  from?: string;
  to?: string;
  dim?: string[];
  limit?: string;
  all?: boolean;
  json?: boolean;
}

export function registerPartitions(program: Command): void {
  program
    .command("partitions <asset-key>")
    .description(
      "List an asset's existing partition keys with each window's start and end (UTC) and status; the latest 50 unless told otherwise",
    )
    .option("--from <key>", "first partition key (inclusive)")
    .option("--to <key>", "last partition key (inclusive)")
    .option(DIM_FLAGS, DIM_HELP, collectDim)
    .option("--limit <n>", "show the latest n of the selected partitions (default 50)")
    .option("--all", "show every selected partition")
    .option("--json", "machine-readable output (the same partitions; stale ones with their reasons)")
    .action(async (key: string, opts: PartitionsOptions, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runPartitions } = await import("./partitions.action.js");
      await runPartitions(key, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
