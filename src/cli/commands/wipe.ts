import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export interface WipeOptions {
  partition?: string[];
  from?: string;
  to?: string;
  reason?: string;
  dryRun?: boolean;
  json?: boolean;
}

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

export function registerWipe(program: Command): void {
  program
    .command("wipe <asset-key>")
    .description(
      "Remove what is stored of chosen partitions of an asset (statuses, materialisations with their lineage, check results, " +
        "outputs and their objects) so that they are missing again; each keeps a wipe event, and the audit trail who wiped it",
    )
    .option("--partition <key>", "a partition to wipe (repeat for several)", collect)
    .option("--from <key>", "first partition key of a range (inclusive; without it, the first partition)")
    .option("--to <key>", "last partition key of a range (inclusive; without it, the last existing partition)")
    .option("--reason <text>", "why: kept on each partition's wipe event and in the audit trail")
    .option("--dry-run", "say what would be removed, and remove nothing")
    .option("--json", "machine-readable output")
    .action(async (key: string, opts: WipeOptions, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runWipe } = await import("./wipe.action.js");
      await runWipe(key, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
