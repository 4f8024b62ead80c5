import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export interface TriggererCommandOptions {
  concurrency?: string;
  capacity?: string;
  checkTimeout?: string;
  lease?: string;
}

export function registerTriggerer(program: Command): void {
  program
    .command("triggerer")
    .description(
      "Check the triggers of deferred steps and source assets against the database (several may run at once; use DATABASE_URL for Postgres)",
    )
    .option("--concurrency <n>", "checks running at once", "1000")
    .option("--capacity <n>", "triggers this triggerer holds (checks every poll interval); others take the rest", "10000")
    .option("--check-timeout <duration>", "time limit of one check", "30s")
    .option("--lease <duration>", "how long another triggerer waits before taking over this one's triggers if it dies", "30s")
    .action(async (opts: TriggererCommandOptions, cmd: Command) => {
      const { runTriggerer } = await import("./triggerer.action.js");
      await runTriggerer(opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
