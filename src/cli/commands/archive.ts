import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export interface ArchiveOptions {
  json?: boolean;
}

export interface ArchiveRestoreOptions extends ArchiveOptions {
  hold?: string;
}

/**
 * `tributary archive list` and `tributary archive restore <day>`: the history the reconcilers archived past its
 * retention (TRIBUTARY_HISTORY_RETENTION, an asset's `retention.history`). Implementations load on use.
 */
export function registerArchive(program: Command): void {
  const archive = program
    .command("archive")
    .description(
      "History archived past its retention (runs, steps, tries, events, lineage, check results, logs, by day in the output store): " +
        "list the days, or bring one back",
    );
  archive
    .command("list")
    .description("The days with archived history, newest first")
    .option("--json", "machine-readable output")
    .action(async (_opts: ArchiveOptions, cmd: Command) => {
      const { runArchiveList } = await import("./archive.action.js");
      await runArchiveList(cmd.optsWithGlobals<GlobalOptions & ArchiveOptions>());
    });
  archive
    .command("restore <day>")
    .description(
      "Bring a day's archived history (YYYY-MM-DD, UTC) back into the database, logs included, for an investigation; " +
        "the day is archived again once the hold ends",
    )
    .option("--hold <duration>", "how long the day stays out of archival (1h to 3650d)", "7d")
    .option("--json", "machine-readable output")
    .action(async (day: string, _opts: ArchiveRestoreOptions, cmd: Command) => {
      const { runArchiveRestore } = await import("./archive.action.js");
      await runArchiveRestore(day, cmd.optsWithGlobals<GlobalOptions & ArchiveRestoreOptions>());
    });
}
