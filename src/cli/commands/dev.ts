import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";
import type { DevOptions } from "./dev.action.js";

export function registerDev(program: Command): void {
  program
    .command("dev")
    .description("Run everything in one process on the embedded database; reload definitions on change")
    .option("--port <port>", "HTTP port", "3000")
    .option("--host <host>", "HTTP host", "127.0.0.1")
    .option("--processes <n>", "worker processes of the local executor (default: the number of cores)")
    .option("--concurrency-per-process <n>", "steps one worker process runs at once (default 4)")
    .option("--auth", "control access on loopback too (it always is on other addresses)")
    .option("--insecure-no-auth", "serve without access control on any address (never on a shared network)")
    .action(async (opts: DevOptions, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runDev } = await import("./dev.action.js");
      await runDev(opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
