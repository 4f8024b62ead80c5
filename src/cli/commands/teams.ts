import type { Command } from "commander";
import type { GlobalOptions } from "../settings.js";

export interface TeamsOwnOptions {
  group?: string;
  owner?: string;
  remove?: boolean;
  json?: boolean;
}

/** `tributary teams …`: teams own assets (by group or `owner` value); roles granted on a team apply to what it owns. */
export function registerTeams(program: Command): void {
  const teams = program
    .command("teams")
    .description("Create teams and choose what they own: the assets of a group, or the assets with an `owner` value");
  teams
    .command("create <name>")
    .description("Create a team")
    .option("--json", "machine-readable output")
    .action(async (name: string, opts: { json?: boolean }, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runTeamsCreate } = await import("./teams.action.js");
      await runTeamsCreate(name, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
  teams
    .command("own <team>")
    .description("Make a team own the assets of a group (--group) or those whose `owner` is a value (--owner); --remove to stop")
    .option("--group <group>", "the asset group the team owns")
    .option("--owner <owner>", "the `owner` value (of asset definitions) whose assets the team owns")
    .option("--remove", "the team stops owning it")
    .option("--json", "machine-readable output")
    .action(async (team: string, opts: TeamsOwnOptions, cmd: Command) => {
      const { runTeamsOwn } = await import("./teams.action.js");
      await runTeamsOwn(team, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
  teams
    .command("list")
    .description("List teams: the groups and owners each owns, the assets that makes, and its members with their roles")
    .option("--json", "machine-readable output")
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const { runTeamsList } = await import("./teams.action.js");
      await runTeamsList(opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
