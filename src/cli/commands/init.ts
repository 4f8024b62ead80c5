import type { Command } from "commander";

export interface InitOptions {
  force?: boolean;
  tributary?: string;
  json?: boolean;
}

export function registerInit(program: Command): void {
  program
    .command("init [dir]")
    .description(
      "Start a project in a new or empty directory (default: the current one): package.json, tsconfig.json, two example assets with a check, and a test of them",
    )
    .option("--force", "write into a directory that is not empty (existing files are never overwritten)")
    .option("--tributary <spec>", "what the project's package.json depends on for tributary (default: this installation, as file:<path>)")
    .option("--json", "machine-readable output")
    .action(async (dir: string | undefined, opts: InitOptions) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runInit } = await import("./init.action.js");
      await runInit(dir ?? ".", opts);
    });
}
