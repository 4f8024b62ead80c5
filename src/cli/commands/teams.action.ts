import { owningTeams } from "../../access/index.js";
import type { GraphCache, TeamRecord } from "../../storage/index.js";
import { withAccessAdmin } from "../access-admin.js";
import { oneOf, parseInputs, schemas } from "../access-inputs.js";
import { printJson, table } from "../output.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";
import type { TeamsOwnOptions } from "./teams.js";

/** A team with the assets of the current definitions it owns. */
interface TeamView {
  readonly team: TeamRecord;
  readonly assets: readonly string[];
}

export async function runTeamsCreate(rawName: string, opts: { json?: boolean }, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const { name } = parseInputs({ name: { flag: "<name>", value: rawName } }, { name: schemas.teamName });
  const team = await withAccessAdmin(settings, ({ store, audit }) =>
    store.createTeam(name, audit("createTeam", { team: name }), new Date()),
  );
  if (opts.json) printJson({ ok: true, team: teamJson({ team, assets: [] }) });
  else process.stdout.write(`created team "${name}"; give it assets with \`tributary teams own ${name} --group <group>\`\n`);
}

export async function runTeamsOwn(rawTeam: string, opts: TeamsOwnOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const owned = oneOf({ flag: "--group", value: opts.group }, { flag: "--owner", value: opts.owner }, "OWNERSHIP_REQUIRED");
  const input = parseInputs(
    { team: { flag: "<team>", value: rawTeam }, value: { flag: owned.flag, value: owned.value } },
    { team: schemas.teamName, value: schemas.ownedValue },
  );
  const kind = owned.flag === "--group" ? "group" : "owner";
  const view = await withAccessAdmin(settings, async ({ store, graphs, audit }) => {
    const team = await store.setOwnership(
      input.team,
      { kind, value: input.value, remove: opts.remove ?? false },
      audit("setTeamOwnership", { team: input.team, kind, value: input.value, remove: opts.remove ?? false }),
      new Date(),
    );
    return (await withAssets([team], graphs))[0]!;
  });
  if (opts.json) {
    printJson({ ok: true, team: teamJson(view) });
    return;
  }
  const what = kind === "group" ? `group "${input.value}"` : `owner "${input.value}"`;
  process.stdout.write(
    `team "${input.team}" ${opts.remove ? "no longer owns" : "owns"} the assets of ${what}; ` +
      `it owns ${view.assets.length} asset(s) of the current definitions\n`,
  );
}

export async function runTeamsList(opts: { json?: boolean }, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const views = await withAccessAdmin(settings, async ({ store, graphs }) => withAssets(await store.listTeams(), graphs));
  if (opts.json) {
    printJson({ ok: true, teams: views.map(teamJson) });
    return;
  }
  if (views.length === 0) {
    process.stdout.write("no teams yet: create one with `tributary teams create <name>`\n");
    return;
  }
  process.stdout.write(
    `${table(
      ["team", "groups", "owners", "assets", "members"],
      views.map(({ team, assets }) => [
        team.name,
        team.groups.join(", "),
        team.owners.join(", "),
        String(assets.length),
        team.members.map((m) => `${m.principal} (${m.role})`).join(", "),
      ]),
    )}\n`,
  );
}

/** Each team with the assets it owns in the current definitions (none while nothing is defined). */
async function withAssets(teams: readonly TeamRecord[], graphs: GraphCache): Promise<TeamView[]> {
  const { graph } = await graphs.current();
  return teams.map((team) => ({
    team,
    assets: graph.assets
      .filter((a) => owningTeams({ key: a.key, group: a.group, owner: a.owner ?? null }, [team]).length > 0)
      .map((a) => a.key),
  }));
}

function teamJson({ team, assets }: TeamView): Record<string, unknown> {
  return { name: team.name, groups: team.groups, owners: team.owners, assets, members: team.members };
}
