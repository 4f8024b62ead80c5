import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";
import { collectDim, DIM_FLAGS, DIM_HELP } from "./dimension-option.js";

export interface BackfillOptions {
  from?: string;
  to?: string;
  partition?: string[];
  all?: boolean;
  dim?: string[];
  maxRuns?: string;
  maxPartitionsPerRun?: string;
  includeUpstream?: boolean;
  wait?: boolean;
  json?: boolean;
  processes?: string;
}

/**
 * `tributary backfill <keys…>` launches; `backfill show|cancel|resume|retry-failed <id>`
 * manage one; `backfills` lists them. Implementations load on use.
 */
export function registerBackfill(program: Command): void {
  const backfill = program
    .command("backfill")
    .usage("<asset-keys...> --from A --to B [options] | backfill show|cancel|resume|retry-failed <id>")
    .description("Materialise partitions of assets as a paced series of runs, oldest first, below scheduled work in priority")
    .argument("<asset-keys...>", "assets to backfill")
    .option("--from <key>", "first partition key (inclusive), in the selection's partitions")
    .option("--to <key>", "last partition key (inclusive)")
    .option("--partition <key...>", "these partition keys instead of a range")
    .option("--all", "every existing partition")
    .option(DIM_FLAGS, DIM_HELP, collectDim)
    .option("--max-runs <n>", "runs in flight at once (default 1)")
    .option("--max-partitions-per-run <n>", "partitions per run (default 1; e.g. 365 for one big run)")
    .option("--include-upstream", "also materialise upstream partitions it reads that are not materialised")
    .option("--wait", "wait until it ends, with a live progress bar; exit code 0 only if no partition failed")
    .option("--processes <n>", "worker processes when running in-process (no server running)")
    .option("--json", "machine-readable output")
    .action(async (keys: string[], opts: BackfillOptions, cmd: Command) => {
      const { runBackfill } = await import("./backfill.action.js");
      await runBackfill(keys, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
  backfill
    .command("show <id>")
    .description("Show a backfill: status, progress counts, what it waits for, failed partitions")
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      const { runBackfillShow } = await import("./backfill.action.js");
      await runBackfillShow(id, cmd.optsWithGlobals<GlobalOptions & BackfillOptions>());
    });
  backfill
    .command("cancel <id>")
    .description("Cancel a backfill: no new runs; its runs in flight are canceled")
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      const { runBackfillControl } = await import("./backfill.action.js");
      await runBackfillControl("cancel", id, cmd.optsWithGlobals<GlobalOptions & BackfillOptions>());
    });
  backfill
    .command("resume <id>")
    .description("Resume a canceled backfill where it stopped")
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      const { runBackfillControl } = await import("./backfill.action.js");
      await runBackfillControl("resume", id, cmd.optsWithGlobals<GlobalOptions & BackfillOptions>());
    });
  backfill
    .command("retry-failed <id>")
    .description("Re-run only the failed partitions of an ended backfill, as a new backfill")
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      const { runBackfillControl } = await import("./backfill.action.js");
      await runBackfillControl("retry-failed", id, cmd.optsWithGlobals<GlobalOptions & BackfillOptions>());
    });
  program
    .command("backfills")
    .description("List recent backfills")
    .option("--status <status>", "only backfills in this status (requested, running, completed, failed, canceling, canceled)")
    .option("--limit <n>", "how many", "20")
    .option("--json", "machine-readable output")
    .action(async (opts: { status?: string; limit: string; json?: boolean }, cmd: Command) => {
      const { runBackfills } = await import("./backfill.action.js");
      await runBackfills(opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
