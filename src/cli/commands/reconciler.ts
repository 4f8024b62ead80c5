import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export interface ReconcilerCommandOptions {
  processes?: string;
  concurrencyPerProcess?: string;
  watch?: boolean;
  zombieAfter?: string;
  queuedTimeout?: string;
  presumedDeadAfter?: string;
  metricsPort?: string;
  metricsHost: string;
  localSteps: string;
}

export function registerReconciler(program: Command): void {
  program
    .command("reconciler")
    .description("Run a reconciler with the local executor against the database (several may run at once; use DATABASE_URL for Postgres)")
    .option("--processes <n>", "worker processes of the local executor (default: the number of cores)")
    .option("--concurrency-per-process <n>", "steps one worker process runs at once (default 4)")
    .option("--watch", "reload the definitions when a file changes")
    .option("--zombie-after <duration>", "fail (and retry) running steps without a heartbeat for this long", "60s")
    .option("--queued-timeout <duration>", "hand out again steps not started this long after being queued", "5m")
    .option(
      "--presumed-dead-after <duration>",
      "hand out again the steps another reconciler claimed and had not started when it stopped heartbeating this long (at least 2s)",
      "30s",
    )
    .option(
      "--metrics-port <port>",
      "serve this reconciler's /metrics (pass and task durations, process metrics), /healthz and /readyz on this port " +
        "(default: $TRIBUTARY_METRICS_PORT; unset: not served)",
    )
    .option("--metrics-host <host>", "host the metrics port listens on", "127.0.0.1")
    .option(
      "--local-steps <where>",
      'where steps of `executor: "local"` assets run: "processes" (this reconciler\'s worker processes) or "workers" ' +
        "(the BullMQ fleet of `tributary worker`, needs REDIS_URL)",
      "processes",
    )
    .action(async (opts: ReconcilerCommandOptions, cmd: Command) => {
      const { runReconciler } = await import("./reconciler.action.js");
      await runReconciler(opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
