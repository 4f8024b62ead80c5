import type { AuditEvent } from "../../storage/index.js";
import { shortTime, withAccessAdmin } from "../access-admin.js";
import { optionalInput, parseInputs, schemas } from "../access-inputs.js";
import { printJson, table } from "../output.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";
import type { AuditOptions } from "./audit.js";

export async function runAudit(opts: AuditOptions, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const { limit } = parseInputs({ limit: { flag: "--limit", value: opts.limit } }, { limit: schemas.limit });
  const since = optionalInput("--since", opts.since, schemas.since);
  const user = optionalInput("--user", opts.user, schemas.principalName);
  const action = optionalInput("--action", opts.action, schemas.action);
  const events = await withAccessAdmin(settings, ({ store }) => store.auditEvents({ since, principalName: user, action, limit }));
  if (opts.json) {
    printJson({ ok: true, events: events.map((e) => ({ ...e, at: e.at.toISOString() })) });
    return;
  }
  if (events.length === 0) {
    process.stdout.write("no audit records match\n");
    return;
  }
  process.stdout.write(
    `${table(
      ["at (UTC)", "principal", "action", "outcome", "assets", "partitions", "address", "detail"],
      events.map((e) => [
        shortTime(e.at),
        principalOf(e),
        e.action,
        e.outcome,
        listed(e.assets),
        listed(e.partitions),
        e.address ?? "",
        Object.keys(e.detail).length > 0 ? JSON.stringify(e.detail) : "",
      ]),
    )}\n`,
  );
}

/** Who, and through which API token when one was used. */
function principalOf(e: AuditEvent): string {
  const name = e.principalName ?? "";
  return e.tokenId ? `${name} (token ${e.tokenId.slice(0, 8)})` : name;
}

/** A few values, and how many more. */
function listed(values: readonly string[]): string {
  return values.length <= 3 ? values.join(", ") : `${values.slice(0, 3).join(", ")} (+${values.length - 3})`;
}
