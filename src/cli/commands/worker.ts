import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export interface WorkerCommandOptions {
  queues?: string;
  processes?: string;
  concurrency?: string;
  memoryMb?: string;
  grace: string;
  logsDir?: string;
}

export function registerWorker(program: Command): void {
  program
    .command("worker")
    .description(
      'Run steps of assets with executor "bullmq": take them from Redis queues (REDIS_URL) and report through the API ' +
        "server at --url (no database credentials needed); run any number of them",
    )
    .option("--queues <names>", "asset queues to take steps from, comma-separated (the assets' `queue`)", "default")
    .option("--processes <n>", "worker processes (default: the number of cores)")
    .option("--concurrency <n>", "steps one worker process runs at once (default 4)")
    .option("--memory-mb <n>", "heap limit of each worker process (default 1024)")
    .option("--grace <duration>", "on SIGTERM, how long running steps get to finish before they are stopped and handed back", "30s")
    .option("--logs-dir <dir>", "where step logs are written before they are shipped (default <data-dir>/worker-logs)")
    .action(async (opts: WorkerCommandOptions, cmd: Command) => {
      const { runWorker } = await import("./worker.action.js");
      await runWorker(opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
