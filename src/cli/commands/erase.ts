import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export interface EraseOptions {
  partition?: string[];
  reason?: string;
  dryRun?: boolean;
  wait?: boolean;
  json?: boolean;
}

export interface EraseListOptions {
  state?: string;
  limit?: string;
}

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/**
 * `tributary erase <asset-key> --partition K…` requests an erasure; `erase show|list|retry` follow them. The
 * subcommand names come first, so they win over an asset of the same name. Implementations load on use.
 */
export function registerErase(program: Command): void {
  const erase = program
    .command("erase")
    .usage("<asset-key> --partition <key>... [options] | erase show <id> | erase list | erase retry <id>")
    .description(
      "Erase the data of partitions of an asset and of everything derived from it: delete their stored outputs, objects " +
        "and logs, call the assets' erase hooks, re-materialise them from the cleaned source, and keep the proof",
    )
    .argument("<asset-key>", "the asset that held the data")
    .option("--partition <key>", "a partition that held the data (repeat for several; none for an unpartitioned asset)", collect)
    .option("--reason <text>", "why: kept with the request, passed to the erase hooks and recorded in the audit trail")
    .option("--dry-run", "say what would be erased, and record nothing")
    .option(
      "--wait",
      "follow the request until it is done or failed (exit code 1 when it failed); without a server, it is carried out in this process anyway",
    )
    .option("--json", "machine-readable output")
    .action(async (key: string, opts: EraseOptions, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runErase } = await import("./erase.action.js");
      await runErase(key, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
  erase
    .command("show <id>")
    .description("The proof report of a request: what it deleted, the erase hooks it called, what replaced each partition")
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      const { runEraseShow } = await import("./erase.action.js");
      await runEraseShow(id, cmd.optsWithGlobals<GlobalOptions & EraseOptions>());
    });
  erase
    .command("list")
    .description("Erasure requests, newest first")
    .option("--state <state>", "only requests in this state (planned, erasing, rematerialising, done, failed)")
    .option("--limit <n>", "how many (1 to 500)", "50")
    .action(async (opts: EraseListOptions, cmd: Command) => {
      const { runEraseList } = await import("./erase.action.js");
      await runEraseList(opts, cmd.optsWithGlobals<GlobalOptions & EraseOptions>());
    });
  erase
    .command("retry <id>")
    .description("Take a failed request up again where it failed (hooks that returned are not called again)")
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      const { runEraseRetry } = await import("./erase.action.js");
      await runEraseRetry(id, cmd.optsWithGlobals<GlobalOptions & EraseOptions>());
    });
}
