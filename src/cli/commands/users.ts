import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export interface UsersCreateOptions {
  passwordStdin?: boolean;
  admin?: boolean;
  service?: boolean;
  json?: boolean;
}

/** `tributary users …`: users (people, who sign in) and service accounts (scripts, which hold tokens). */
export function registerUsers(program: Command): void {
  const users = program
    .command("users")
    .description("Create, list, disable and enable users and service accounts, and set passwords (on the configured database)");
  users
    .command("create <name>")
    .description("Create a user (or, with --service, a service account)")
    .option("--password-stdin", "read the user's password from standard input (at least 8 characters)")
    .option("--admin", "also grant the admin role without a team: every asset, pools, users, tokens, teams and the audit trail")
    .option("--service", "a service account: holds API tokens, never signs in with a password")
    .option("--json", "machine-readable output")
    .action(async (name: string, opts: UsersCreateOptions, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runUsersCreate } = await import("./users.action.js");
      await runUsersCreate(name, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
  users
    .command("list")
    .description("List users and service accounts with their roles")
    .option("--json", "machine-readable output")
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const { runUsersList } = await import("./users.action.js");
      await runUsersList(opts, cmd.optsWithGlobals<GlobalOptions>());
    });
  for (const verb of ["disable", "enable"] as const) {
    users
      .command(`${verb} <name>`)
      .description(
        verb === "disable"
          ? "Disable a user or service account: its tokens and sessions stop working at once (kept, for `enable`)"
          : "Enable a disabled user or service account again",
      )
      .option("--json", "machine-readable output")
      .action(async (name: string, opts: { json?: boolean }, cmd: Command) => {
        const { runUsersSetDisabled } = await import("./users.action.js");
        await runUsersSetDisabled(verb === "disable", name, opts, cmd.optsWithGlobals<GlobalOptions>());
      });
  }
  users
    .command("password <name>")
    .description("Set a user's password, read from standard input; ends the user's sign-in sessions")
    .option("--password-stdin", "read the password from standard input (required: a password is never a flag)")
    .option("--json", "machine-readable output")
    .action(async (name: string, opts: { passwordStdin?: boolean; json?: boolean }, cmd: Command) => {
      const { runUsersPassword } = await import("./users.action.js");
      await runUsersPassword(name, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
