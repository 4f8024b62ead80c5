import type { Grant, Role } from "../storage/index.js";

export type { Grant, Role } from "../storage/index.js";

/** The roles, weakest first: each includes what the ones before it may do. */
export const ROLES: readonly Role[] = ["viewer", "operator", "admin"];

/** What each role may do, in the words refusals and docs use. */
export const ROLE_MEANING: Readonly<Record<Role, string>> = {
  viewer: "read the team's assets, runs, logs and outputs",
  operator: "launch, clear, backfill, cancel, report, pause and resume, and run checks on the team's assets",
  admin: "everything on the team's assets; granted without a team: pools, users, tokens, teams and the audit trail",
};

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}

/** Whether `held` includes `needed`. */
export function roleCovers(held: Role, needed: Role): boolean {
  return ROLES.indexOf(held) >= ROLES.indexOf(needed);
}

/** The strongest of the grants that apply, or undefined. */
export function strongest(grants: readonly Grant[]): Role | undefined {
  let best: Role | undefined;
  for (const g of grants) if (!best || roleCovers(g.role, best)) best = g.role;
  return best;
}
