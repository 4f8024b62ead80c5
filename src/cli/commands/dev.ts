import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export function registerDev(program: Command): void {
  program
    .command("dev")
    .description("Run everything in one process on the embedded database; reload definitions on change")
    .option("--port <port>", "HTTP port", "3000")
    .option("--host <host>", "HTTP host", "127.0.0.1")
    .option("--processes <n>", "worker processes of the local executor (default: the number of cores)")
    .option("--concurrency-per-process <n>", "steps one worker process runs at once (default 4)")
    .action(async (opts: { port: string; host: string; processes?: string; concurrencyPerProcess?: string }, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runDev } = await import("./dev.action.js");
      await runDev(opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
