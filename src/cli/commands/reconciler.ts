import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export interface ReconcilerCommandOptions {
  processes?: string;
  concurrencyPerProcess?: string;
  watch?: boolean;
  zombieAfter?: string;
  queuedTimeout?: string;
}

export function registerReconciler(program: Command): void {
  program
    .command("reconciler")
    .description(
      "Run a reconciler with the local executor against the database (several may run at once; use DATABASE_URL for Postgres)",
    )
    .option("--processes <n>", "worker processes of the local executor (default: the number of cores)")
    .option("--concurrency-per-process <n>", "steps one worker process runs at once (default 4)")
    .option("--watch", "reload the definitions when a file changes")
    .option("--zombie-after <duration>", "fail (and retry) running steps without a heartbeat for this long", "60s")
    .option("--queued-timeout <duration>", "hand out again steps not started this long after being queued", "5m")
    .action(async (opts: ReconcilerCommandOptions, cmd: Command) => {
      const { runReconciler } = await import("./reconciler-run.js");
      await runReconciler(opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
