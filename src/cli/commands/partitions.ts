import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export function registerPartitions(program: Command): void {
  program
    .command("partitions <asset-key>")
    .description("List an asset's existing partition keys with each window's start and end (UTC)")
    .option("--from <key>", "first partition key (inclusive)")
    .option("--to <key>", "last partition key (inclusive)")
    .option("--json", "machine-readable output")
    .action(async (key: string, opts: { from?: string; to?: string; json?: boolean }, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runPartitions } = await import("./partitions-run.js");
      await runPartitions(key, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
