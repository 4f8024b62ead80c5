import { hashPassword } from "../../access/index.js";
import { InputError } from "../../errors/index.js";
import { grantLabel, kindLabel, principalJson, shortTime, warnWithoutAdmin, withAccessAdmin } from "../access-admin.js";
import { parseInputs, readPassword, schemas } from "../access-inputs.js";
import { printJson, table } from "../output.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";
import type { UsersCreateOptions } from "./users.js";

export async function runUsersCreate(rawName: string, opts: UsersCreateOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const { name } = parseInputs({ name: { flag: "<name>", value: rawName } }, { name: schemas.principalName });
  if (opts.service && opts.passwordStdin) {
    throw new InputError("--service and --password-stdin exclude each other: a service account holds API tokens and never signs in", {
      code: "SERVICE_ACCOUNT_PASSWORD",
      location: { field: "--password-stdin" },
    });
  }
  const kind = opts.service ? "service" : "user";
  // Read and hashed before the database is opened: a refused password changes nothing.
  const passwordHash = opts.passwordStdin ? await hashPassword(await readPassword(`password for ${name}: `)) : undefined;
  const created = await withAccessAdmin(settings, async ({ store, audit }) => {
    const now = new Date();
    const principal = await store.createPrincipal(
      { name, kind, ...(passwordHash ? { passwordHash } : {}) },
      audit("createUser", { name, kind }),
      now,
    );
    if (!opts.admin) return principal;
    return store.grant({ principalName: name, role: "admin", team: null }, audit("grantRole", { name, role: "admin", team: null }), now);
  });
  if (opts.json) {
    printJson({ ok: true, user: principalJson(created) });
    return;
  }
  const roles = created.grants.length > 0 ? ` with ${created.grants.map(grantLabel).join(", ")}` : ", without any role";
  process.stdout.write(`created ${kindLabel(kind)} "${name}"${roles}\n`);
  if (kind === "service") process.stdout.write(`give it a token: tributary tokens create --service ${name}\n`);
  else if (!passwordHash) {
    process.stdout.write(`it has no password: set one with \`tributary users password ${name} --password-stdin\`\n`);
  }
  if (created.grants.length === 0) process.stdout.write(`grant it a role: tributary grant viewer --team <team> --to ${name}\n`);
}

export async function runUsersList(opts: { json?: boolean }, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const principals = await withAccessAdmin(settings, ({ store }) => store.listPrincipals());
  if (opts.json) {
    printJson({ ok: true, users: principals.map(principalJson) });
    return;
  }
  if (principals.length === 0) {
    process.stdout.write(
      "no users or service accounts yet: create the first admin with `tributary users create admin --admin --password-stdin`\n",
    );
    return;
  }
  process.stdout.write(
    `${table(
      ["name", "kind", "password", "status", "roles", "created (UTC)"],
      principals.map((p) => [
        p.name,
        kindLabel(p.kind),
        p.kind === "service" ? "" : p.hasPassword ? "set" : "none",
        p.disabled ? "disabled" : "enabled",
        p.grants.map(grantLabel).join(", "),
        shortTime(p.createdAt),
      ]),
    )}\n`,
  );
}

export async function runUsersSetDisabled(
  disabled: boolean,
  rawName: string,
  opts: { json?: boolean },
  globals: GlobalOptions,
): Promise<void> {
  const settings = resolveSettings(globals);
  const { name } = parseInputs({ name: { flag: "<name>", value: rawName } }, { name: schemas.principalName });
  const principal = await withAccessAdmin(settings, async ({ store, audit }) => {
    const changed = await store.setDisabled(name, disabled, audit(disabled ? "disableUser" : "enableUser", { name }), new Date());
    if (disabled) await warnWithoutAdmin(store);
    return changed;
  });
  if (opts.json) {
    printJson({ ok: true, user: principalJson(principal) });
    return;
  }
  process.stdout.write(
    disabled
      ? `disabled ${kindLabel(principal.kind)} "${name}": its tokens and sessions no longer work\n`
      : `enabled ${kindLabel(principal.kind)} "${name}"\n`,
  );
}

export async function runUsersPassword(
  rawName: string,
  opts: { passwordStdin?: boolean; json?: boolean },
  globals: GlobalOptions,
): Promise<void> {
  const settings = resolveSettings(globals);
  const { name } = parseInputs({ name: { flag: "<name>", value: rawName } }, { name: schemas.principalName });
  if (!opts.passwordStdin) {
    throw new InputError(
      `users password: give --password-stdin and pass the password on standard input (e.g. \`tributary users password ${name} --password-stdin < file\`); a password is never a flag`,
      { code: "PASSWORD_STDIN_REQUIRED", location: { field: "--password-stdin" } },
    );
  }
  const passwordHash = await hashPassword(await readPassword(`new password for ${name}: `));
  await withAccessAdmin(settings, async ({ store, audit }) => {
    const principal = await store.principal(name);
    if (principal?.kind === "service") {
      throw new InputError(`"${name}" is a service account: it holds API tokens and never signs in with a password`, {
        code: "SERVICE_ACCOUNT_PASSWORD",
        location: { field: "<name>" },
      });
    }
    await store.setPassword(name, passwordHash, audit("setPassword", { name }), new Date());
  });
  if (opts.json) printJson({ ok: true, name });
  else process.stdout.write(`set the password of user "${name}"; its sign-in sessions have ended\n`);
}
