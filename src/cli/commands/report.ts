import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export interface ReportOptions {
  partition?: string;
  metadata?: string;
  dataVersion?: string;
  observation?: boolean;
  json?: boolean;
}

export function registerReport(program: Command): void {
  program
    .command("report <asset-key>")
    .description("Record that a producer outside Tributary wrote a partition of an asset (an external event)")
    .option("--partition <key>", "the partition written (required for a partitioned asset)")
    .option("--metadata <json>", "a JSON object stored with the event, e.g. '{\"rows\":3}' (at most 64 KB)")
    .option("--data-version <version>", "the data version of what was written")
    .option("--observation", "record an observation (the data was seen) instead of an external write")
    .option("--json", "machine-readable output")
    .action(async (key: string, opts: ReportOptions, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runReport } = await import("./report.action.js");
      await runReport(key, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
