import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";
import { collectDim, DIM_FLAGS, DIM_HELP } from "./dimension-option.js";

export interface MaterializeOptions {
  partition?: string;
  from?: string;
  to?: string;
  all?: boolean;
  dim?: string[];
  includeUpstream?: boolean;
  wait?: boolean;
  json?: boolean;
  processes?: string;
  maxActiveSteps?: string;
}

export function registerMaterialize(program: Command): void {
  program
    .command("materialize <asset-keys...>")
    .description("Plan and run the selected partitions of the selected assets, in dependency order")
    .option("--partition <key>", "one partition key")
    .option("--from <key>", "first partition key of a range (inclusive)")
    .option("--to <key>", "last partition key of a range (inclusive)")
    .option("--all", "every existing partition")
    .option(DIM_FLAGS, DIM_HELP, collectDim)
    .option("--include-upstream", "also materialise the upstream partitions the run reads that are not materialised yet")
    .option("--wait", "wait for the run to finish, with a live progress bar; exit code 0 only if it succeeded")
    .option("--max-active-steps <n>", "at most this many steps of the run at once")
    .option("--processes <n>", "worker processes when running in-process (no server running)")
    .option("--json", "machine-readable output")
    .action(async (keys: string[], opts: MaterializeOptions, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runMaterialize } = await import("./materialize.action.js");
      await runMaterialize(keys, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
