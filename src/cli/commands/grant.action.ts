import { InputError } from "../../errors/index.js";
import { grantLabel, kindLabel, principalJson, warnWithoutAdmin, withAccessAdmin } from "../access-admin.js";
import { optionalInput, parseInputs, schemas } from "../access-inputs.js";
import { printJson } from "../output.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";
import type { GrantOptions } from "./grant.js";

export async function runGrant(verb: "grant" | "revoke", rawRole: string, opts: GrantOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const whoFlag = verb === "grant" ? "--to" : "--from";
  const who = verb === "grant" ? opts.to : opts.from;
  if (who === undefined) {
    throw new InputError(`${verb}: name the user or service account with ${whoFlag} <name>`, {
      code: "PRINCIPAL_REQUIRED",
      location: { field: whoFlag },
    });
  }
  const input = parseInputs(
    { role: { flag: "<role>", value: rawRole }, name: { flag: whoFlag, value: who } },
    { role: schemas.role, name: schemas.principalName },
  );
  const team = optionalInput("--team", opts.team, schemas.teamName) ?? null;
  const grant = { principalName: input.name, role: input.role, team };
  const label = grantLabel({ role: grant.role, team: grant.team });
  const principal = await withAccessAdmin(settings, async ({ store, audit }) => {
    const detail = { name: grant.principalName, role: grant.role, team: grant.team };
    if (verb === "grant") return store.grant(grant, audit("grantRole", detail), new Date());
    const before = await store.principal(grant.principalName);
    if (before && !before.grants.some((g) => g.role === grant.role && g.team === grant.team)) {
      const held = before.grants.length > 0 ? `it holds ${before.grants.map(grantLabel).join(", ")}` : "it holds no role";
      throw new InputError(`"${grant.principalName}" does not hold ${label}: ${held}`, { code: "GRANT_NOT_FOUND" });
    }
    const after = await store.revokeGrant(grant, audit("revokeRole", detail), new Date());
    if (grant.role === "admin" && grant.team === null) await warnWithoutAdmin(store);
    return after;
  });
  if (opts.json) {
    printJson({ ok: true, user: principalJson(principal) });
    return;
  }
  const roles = principal.grants.length > 0 ? principal.grants.map(grantLabel).join(", ") : "no role";
  process.stdout.write(
    `${verb === "grant" ? "granted" : "revoked"} ${label} ${verb === "grant" ? "to" : "from"} ${kindLabel(principal.kind)} ` +
      `"${principal.name}"; it holds ${roles}\n`,
  );
}
