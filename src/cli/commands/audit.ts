import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export interface AuditOptions {
  since?: string;
  user?: string;
  action?: string;
  limit: string;
  json?: boolean;
}

/** `tributary audit`: the audit trail, newest first. */
export function registerAudit(program: Command): void {
  program
    .command("audit")
    .description("Show the audit trail, newest first: every change and sign-in, who made it (and with which token), and how it ended")
    .option("--since <when>", "only records since a time ago (24h, 7d) or an ISO 8601 instant")
    .option("--user <name>", "only the records of this user or service account")
    .option("--action <name>", "only this action (launchRun, signIn, createToken…)")
    .option("--limit <n>", "at most this many records", "50")
    .option("--json", "machine-readable output")
    .action(async (opts: AuditOptions, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runAudit } = await import("./audit.action.js");
      await runAudit(opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
