import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";
import { collectDim, DIM_FLAGS, DIM_HELP } from "./dimension-option.js";

export interface ClearOptions {
  partition?: string;
  from?: string;
  to?: string;
  dim?: string[];
  downstream?: boolean;
  onlyFailed?: boolean;
  wait?: boolean;
  json?: boolean;
  processes?: string;
  run?: string;
  mapIndex?: string;
}

export function registerClear(program: Command): void {
  program
    .command("clear <asset-key>")
    .description(
      "Clear chosen partitions of an asset (optionally everything downstream of them) and rerun them in one run; upstream results stay",
    )
    .option("--partition <key>", "one partition key")
    .option("--from <key>", "first partition key of a range (inclusive)")
    .option("--to <key>", "last partition key of a range (inclusive)")
    .option(DIM_FLAGS, DIM_HELP, collectDim)
    .option("--downstream", "also clear every downstream partition that reads the cleared ones")
    .option("--only-failed", "only the selected partitions that failed (without a selection: every failed one)")
    .option("--run <run-id>", "with --map-index: run one mapped step of this run again, inside the run (which reopens)")
    .option("--map-index <n>", "the mapped step (item position) to run again; needs --run, and --partition when partitioned")
    .option("--wait", "wait for the rerun to finish, with a live progress bar; exit code 0 only if it succeeded")
    .option("--processes <n>", "worker processes when running in-process (no server running)")
    .option("--json", "machine-readable output")
    .action(async (key: string, opts: ClearOptions, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runClear } = await import("./clear.action.js");
      await runClear(key, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
