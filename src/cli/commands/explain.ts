import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export interface ExplainOptions {
  partition?: string;
  json?: boolean;
}

export function registerExplain(program: Command): void {
  program
    .command("explain <asset-key>")
    .description(
      "Explain an asset's definition in words: partitions, what each dependency reads for one partition, automation, settings, checks and readers (no database needed)",
    )
    .option("--partition <key>", "the partition whose reads are shown (default: the latest existing one)")
    .option("--json", "machine-readable output")
    .action(async (key: string, opts: ExplainOptions, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runExplain } = await import("./explain.action.js");
      await runExplain(key, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
