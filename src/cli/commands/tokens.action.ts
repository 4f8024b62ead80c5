import { newApiToken } from "../../access/index.js";
import { InputError } from "../../errors/index.js";
import type { TokenRecord } from "../../storage/index.js";
import { kindLabel, shortTime, withAccessAdmin } from "../access-admin.js";
import { oneOf, optionalInput, parseInputs, schemas } from "../access-inputs.js";
import { printJson, table } from "../output.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";
import type { TokensCreateOptions } from "./tokens.js";

export async function runTokensCreate(opts: TokensCreateOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const owner = oneOf({ flag: "--user", value: opts.user }, { flag: "--service", value: opts.service }, "TOKEN_OWNER_REQUIRED");
  const input = parseInputs(
    {
      name: { flag: owner.flag, value: owner.value },
      lifetimeMs: { flag: "--expires", value: opts.expires },
      description: { flag: "--description", value: opts.description ?? "" },
    },
    { name: schemas.principalName, lifetimeMs: schemas.expires, description: schemas.description },
  );
  const kind = owner.flag === "--service" ? "service" : "user";
  const { token, prefix, hash } = newApiToken();
  const record = await withAccessAdmin(settings, async ({ store, audit }) => {
    const principal = await store.principal(input.name);
    if (!principal) {
      throw new InputError(`${owner.flag}: no ${kindLabel(kind)} is named "${input.name}"; \`tributary users list\` shows them`, {
        code: "PRINCIPAL_NOT_FOUND",
        location: { field: owner.flag },
      });
    }
    if (principal.kind !== kind) {
      const flag = principal.kind === "service" ? "--service" : "--user";
      throw new InputError(`${owner.flag}: "${input.name}" is a ${kindLabel(principal.kind)}; name it with ${flag} ${input.name}`, {
        code: "PRINCIPAL_KIND_MISMATCH",
        location: { field: owner.flag },
      });
    }
    if (principal.disabled) {
      throw new InputError(
        `${owner.flag}: ${kindLabel(kind)} "${input.name}" is disabled; enable it first (\`tributary users enable ${input.name}\`)`,
        {
          code: "PRINCIPAL_DISABLED",
          location: { field: owner.flag },
        },
      );
    }
    const now = new Date();
    const expiresAt = input.lifetimeMs === null ? null : new Date(now.getTime() + input.lifetimeMs);
    return store.createToken(
      { principalName: input.name, tokenHash: hash, prefix, description: input.description, expiresAt },
      audit("createToken", { name: input.name, expiresAt: expiresAt?.toISOString() ?? null }),
      now,
    );
  });
  if (opts.json) {
    printJson({ ok: true, token, id: record.id, prefix: record.prefix, expiresAt: record.expiresAt?.toISOString() ?? null });
    process.stderr.write("the token will not be shown again: store it now\n");
    return;
  }
  // The token alone on stdout, so `TOKEN=$(tributary tokens create …)` keeps just it; the rest on stderr.
  process.stderr.write(
    `token ${record.id} for ${kindLabel(kind)} "${input.name}", ` +
      `${record.expiresAt ? `expires ${shortTime(record.expiresAt)}` : "never expires"}:\n`,
  );
  process.stdout.write(`${token}\n`);
  process.stderr.write(
    "the token will not be shown again: store it now (send it as `Authorization: Bearer <token>`, or set TRIBUTARY_TOKEN for commands)\n",
  );
}

export async function runTokensList(opts: { user?: string; json?: boolean }, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const filter = { user: optionalInput("--user", opts.user, schemas.principalName) };
  const tokens = await withAccessAdmin(settings, async ({ store }) => {
    if (filter.user !== undefined && !(await store.principal(filter.user))) {
      throw new InputError(`--user: no user or service account is named "${filter.user}"; \`tributary users list\` shows them`, {
        code: "PRINCIPAL_NOT_FOUND",
        location: { field: "--user" },
      });
    }
    return store.listTokens(filter.user);
  });
  const now = new Date();
  if (opts.json) {
    printJson({ ok: true, tokens: tokens.map((t) => tokenJson(t, now)) });
    return;
  }
  if (tokens.length === 0) {
    process.stdout.write(`no API tokens${filter.user ? ` of "${filter.user}"` : ""}: create one with \`tributary tokens create\`\n`);
    return;
  }
  process.stdout.write(
    `${table(
      ["id", "prefix", "owner", "description", "created (UTC)", "expires", "last used", "revoked", "state"],
      tokens.map((t) => [
        t.id,
        t.prefix,
        `${t.principalName} (${kindLabel(t.principalKind)})`,
        t.description,
        shortTime(t.createdAt),
        t.expiresAt ? shortTime(t.expiresAt) : "never",
        t.lastUsedAt ? shortTime(t.lastUsedAt) : "never",
        shortTime(t.revokedAt),
        tokenState(t, now),
      ]),
    )}\n`,
  );
}

export async function runTokensRevoke(rawRef: string, opts: { json?: boolean }, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const { ref } = parseInputs({ ref: { flag: "<id-or-prefix>", value: rawRef } }, { ref: schemas.tokenRef });
  // A whole token (a leaked one, pasted) is found by its prefix: the token itself goes no further than this process.
  const idOrPrefix = ref.startsWith("trb_") ? ref.slice(0, 12) : ref.toLowerCase();
  const now = new Date();
  const revoked = await withAccessAdmin(settings, ({ store, audit }) =>
    store.revokeToken(idOrPrefix, audit("revokeToken", { ref: idOrPrefix }), now),
  );
  if (opts.json) {
    printJson({ ok: true, token: tokenJson(revoked, now) });
    return;
  }
  const already =
    revoked.revokedAt && revoked.revokedAt.getTime() !== now.getTime() ? ` (already revoked ${shortTime(revoked.revokedAt)})` : "";
  process.stdout.write(
    `revoked token ${revoked.id} (${revoked.prefix}) of ${kindLabel(revoked.principalKind)} "${revoked.principalName}"${already}\n`,
  );
}

function tokenState(t: TokenRecord, now: Date): "revoked" | "expired" | "active" {
  if (t.revokedAt) return "revoked";
  if (t.expiresAt && t.expiresAt <= now) return "expired";
  return "active";
}

function tokenJson(t: TokenRecord, now: Date): Record<string, unknown> {
  return {
    id: t.id,
    prefix: t.prefix,
    owner: t.principalName,
    ownerKind: t.principalKind,
    description: t.description,
    createdAt: t.createdAt.toISOString(),
    expiresAt: t.expiresAt?.toISOString() ?? null,
    lastUsedAt: t.lastUsedAt?.toISOString() ?? null,
    revokedAt: t.revokedAt?.toISOString() ?? null,
    state: tokenState(t, now),
  };
}
