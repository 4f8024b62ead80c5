import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export interface GrantOptions {
  team?: string;
  to?: string;
  from?: string;
  json?: boolean;
}

/** `tributary grant` and `tributary revoke`: roles on one team's assets, or (without --team) on every asset. */
export function registerGrant(program: Command): void {
  program
    .command("grant <role>")
    .description("Grant a role (viewer, operator or admin) on a team's assets, or without --team on every asset (admin: the instance too)")
    .option("--team <team>", "the team whose assets the role covers (default: every asset, and for admin the instance)")
    .option("--to <name>", "the user or service account")
    .option("--json", "machine-readable output")
    .action(async (role: string, opts: GrantOptions, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runGrant } = await import("./grant.action.js");
      await runGrant("grant", role, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
  program
    .command("revoke <role>")
    .description("Take back a role granted on a team (--team) or without one")
    .option("--team <team>", "the team the role was granted on (default: the grant without a team)")
    .option("--from <name>", "the user or service account")
    .option("--json", "machine-readable output")
    .action(async (role: string, opts: GrantOptions, cmd: Command) => {
      const { runGrant } = await import("./grant.action.js");
      await runGrant("revoke", role, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
