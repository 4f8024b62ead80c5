import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export interface CheckRunOptions {
  partition: string[];
  check: string[];
  wait?: boolean;
  json?: boolean;
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

export function registerCheckRun(program: Command): void {
  program
    .command("check-run <asset-key>")
    .description("Run an asset's checks again on the latest materialisation of its partitions, materialising nothing")
    .option("--partition <key>", "a partition to check (repeat for several; required for a partitioned asset)", collect, [])
    .option("--check <name>", "a check to run (repeat for several; default: all of the asset's checks)", collect, [])
    .option("--wait", "wait for the checks to finish and print each result; exit code 0 only if all passed")
    .option("--json", "machine-readable output")
    .action(async (key: string, opts: CheckRunOptions, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runCheckRun } = await import("./check-run.action.js");
      await runCheckRun(key, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
