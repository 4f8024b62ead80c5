import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export interface PauseOptions {
  group?: string;
  json?: boolean;
}

export function registerPause(program: Command): void {
  for (const verb of ["pause", "resume"] as const) {
    program
      .command(`${verb} [asset-keys...]`)
      .description(
        verb === "pause"
          ? "Pause automation and schedules of assets (and/or a whole group); their manual and backfill runs go on"
          : "Resume automation and schedules of paused assets (and/or a whole group); each follows its catchup setting",
      )
      .option("--group <name>", `${verb} every asset of this group too`)
      .option("--json", "machine-readable output")
      .action(async (keys: string[], opts: PauseOptions, cmd: Command) => {
        // Loaded on use, so `--help` and other commands start fast.
        const { runPause } = await import("./pause.action.js");
        await runPause(verb, keys, opts, cmd.optsWithGlobals<GlobalOptions>());
      });
  }
}
