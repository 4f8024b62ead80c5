import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export interface LineageOptions {
  partition?: string;
  downstream?: boolean;
  upstream?: boolean;
  depth?: string;
  json?: boolean;
}

export function registerLineage(program: Command): void {
  program
    .command("lineage <asset-key>")
    .description(
      "Where a partition's data came from (--upstream, the default) or went (--downstream): the asset graph and the materialisations that read each other",
    )
    .option(
      "--partition <key>",
      "the partition whose latest materialisation the run-level graph starts at (needed for a partitioned asset)",
    )
    .option("--downstream", "follow what read it")
    .option("--upstream", "follow what it read (the default)")
    .option("--depth <n>", "dependency levels to follow (1-20)", "3")
    .option("--json", "machine-readable output")
    .action(async (key: string, opts: LineageOptions, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runLineage } = await import("./lineage.action.js");
      await runLineage(key, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
