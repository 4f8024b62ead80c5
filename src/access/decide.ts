import type { TeamRecord } from "../storage/index.js";
import type { Caller } from "./caller.js";
import { roleCovers, type Grant, type Role } from "./roles.js";

/** What decides who owns an asset: its group and its `owner`, from the definitions. */
export interface AssetOwnership {
  readonly key: string;
  readonly group: string;
  readonly owner: string | null;
}

export type Decision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly role: Role; readonly assetKey: string | null; readonly teams: readonly string[] };

/** The teams owning an asset: those owning its group or its owner value. */
export function owningTeams(asset: AssetOwnership, teams: readonly TeamRecord[]): string[] {
  return teams.filter((t) => t.groups.includes(asset.group) || (asset.owner !== null && t.owners.includes(asset.owner))).map((t) => t.name);
}

/** The grants of the caller that apply to an asset: those without a team, and those of a team owning it. */
function applicable(grants: readonly Grant[], owners: readonly string[]): Grant[] {
  return grants.filter((g) => g.team === null || owners.includes(g.team));
}

/**
 * The one authorisation decision. `assets` given: the caller needs `role` on every one of them (a grant without a
 * team covers every asset; a team's grant covers the assets the team owns; an asset no team owns needs a grant
 * without a team). `assets` null: an instance-wide action (pools, users, tokens, the audit trail), which only a grant
 * without a team covers. The first asset the caller lacks the role on is named.
 */
export function decide(caller: Caller, teams: readonly TeamRecord[], role: Role, assets: readonly AssetOwnership[] | null): Decision {
  if (assets === null) {
    const ok = caller.grants.some((g) => g.team === null && roleCovers(g.role, role));
    return ok ? { allowed: true } : { allowed: false, role, assetKey: null, teams: [] };
  }
  for (const asset of assets) {
    const owners = owningTeams(asset, teams);
    if (!applicable(caller.grants, owners).some((g) => roleCovers(g.role, role))) {
      return { allowed: false, role, assetKey: asset.key, teams: owners };
    }
  }
  return { allowed: true };
}
