import { describe, expect, it } from "vitest";
import { decide, localCaller, owningTeams, type AssetOwnership, type Caller } from "../../src/access/index.js";
import type { TeamRecord } from "../../src/storage/index.js";

const teams: TeamRecord[] = [
  { name: "sales", groups: ["shop"], owners: [], members: [] },
  { name: "finance", groups: [], owners: ["team:finance"], members: [] },
];
const orders: AssetOwnership = { key: "shop/orders", group: "shop", owner: null };
const ledger: AssetOwnership = { key: "fin/ledger", group: "finance", owner: "team:finance" };
const orphan: AssetOwnership = { key: "misc/scratch", group: "misc", owner: null };

function caller(grants: Caller["grants"]): Caller {
  return { principalId: "p1", name: "ann", kind: "user", grants, via: "api-token", tokenId: null, address: null };
}

describe("the authorisation decision", () => {
  it("finds the teams owning an asset by group and by owner value", () => {
    expect(owningTeams(orders, teams)).toEqual(["sales"]);
    expect(owningTeams(ledger, teams)).toEqual(["finance"]);
    expect(owningTeams(orphan, teams)).toEqual([]);
  });

  it("lets a team's role act on the team's assets only, and names the first asset it lacks", () => {
    const operator = caller([{ role: "operator", team: "sales" }]);
    expect(decide(operator, teams, "operator", [orders])).toEqual({ allowed: true });
    expect(decide(operator, teams, "viewer", [orders])).toEqual({ allowed: true });
    expect(decide(operator, teams, "admin", [orders])).toEqual({
      allowed: false,
      role: "admin",
      assetKey: "shop/orders",
      teams: ["sales"],
    });
    expect(decide(operator, teams, "operator", [orders, ledger])).toEqual({
      allowed: false,
      role: "operator",
      assetKey: "fin/ledger",
      teams: ["finance"],
    });
  });

  it("covers unowned assets and the instance only with grants without a team", () => {
    expect(decide(caller([{ role: "admin", team: "sales" }]), teams, "viewer", [orphan]).allowed).toBe(false);
    expect(decide(caller([{ role: "admin", team: "sales" }]), teams, "admin", null).allowed).toBe(false);
    expect(decide(caller([{ role: "viewer", team: null }]), teams, "viewer", [orphan, ledger]).allowed).toBe(true);
    expect(decide(caller([{ role: "operator", team: null }]), teams, "admin", null)).toEqual({
      allowed: false,
      role: "admin",
      assetKey: null,
      teams: [],
    });
    expect(decide(caller([{ role: "admin", team: null }]), teams, "admin", null).allowed).toBe(true);
  });

  it("refuses a caller without grants, and lets the local caller do everything", () => {
    expect(decide(caller([]), teams, "viewer", [orders]).allowed).toBe(false);
    expect(decide(localCaller(), teams, "admin", null).allowed).toBe(true);
    expect(decide(localCaller(), teams, "operator", [orders, ledger, orphan]).allowed).toBe(true);
  });
});
