import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export function registerRuns(program: Command): void {
  program
    .command("runs")
    .description("List recent runs")
    .option("--status <status>", "only runs in this status (queued, running, success, failed, canceled)")
    .option("--limit <n>", "how many", "20")
    .option("--json", "machine-readable output")
    .action(async (opts: { status?: string; limit: string; json?: boolean }, cmd: Command) => {
      const { runRuns } = await import("./runs.action.js");
      await runRuns(opts, cmd.optsWithGlobals<GlobalOptions>());
    });
  program
    .command("run <run-id>")
    .description("Show a run and its steps (state, try, times, errors)")
    .option("--json", "machine-readable output")
    .action(async (id: string, opts: { json?: boolean }, cmd: Command) => {
      const { runRun } = await import("./runs.action.js");
      await runRun(id, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
