import { z } from "zod";
import type { Caller, Role } from "../../access/index.js";
import type { SnapshotAsset } from "../../graph/index.js";
import type { AuditEvent, AuditOutcome, AuditToken, BackfillRecord, JsonValue, RunDetail, RunSummary } from "../../storage/index.js";
import { builder } from "./builder.js";
import { parseInput } from "./errors.js";
import { stepsOfRun } from "./runs.js";

// Who is asking (`me`), what they may do on an asset, a run or a backfill (viewerCan: what the UI offers), and the
// audit trail.

const ASSET_TYPE = "Asset" as unknown as ReturnType<typeof builder.objectRef<SnapshotAsset>>;

const GrantRef = builder.objectRef<{ role: Role; team: string | null }>("Grant").implement({
  description: "A role on one team's assets, or (team null) on every asset and the instance",
  fields: (t) => ({
    role: t.exposeString("role"),
    team: t.exposeString("team", { nullable: true }),
  }),
});

const CallerRef = builder.objectRef<Caller>("Caller").implement({
  description: "Who the request was made as",
  fields: (t) => ({
    name: t.exposeString("name"),
    kind: t.exposeString("kind", { description: "user, service, or local (an instance without access control)" }),
    via: t.exposeString("via", { description: "api-token, access-token, session or local" }),
    grants: t.field({ type: [GrantRef], resolve: (c) => [...c.grants] }),
    admin: t.boolean({
      description: "Holds the admin role without a team: pools, users, tokens, teams and the audit trail",
      resolve: (c) => c.grants.some((g) => g.team === null && g.role === "admin"),
    }),
  }),
});

const AssetPermissionsRef = builder.objectRef<SnapshotAsset>("AssetPermissions").implement({
  description: "What the caller may do on an asset",
  fields: (t) => ({
    view: t.boolean({ description: "Read its logs and outputs", resolve: (a, _args, ctx) => ctx.guard.can("viewer", [a.key]) }),
    operate: t.boolean({
      description: "Launch, clear, backfill, cancel, report, pause and resume, run checks",
      resolve: (a, _args, ctx) => ctx.guard.can("operator", [a.key]),
    }),
    administer: t.boolean({
      description: "Wipe its partitions (admin on it)",
      resolve: (a, _args, ctx) => ctx.guard.can("admin", [a.key]),
    }),
  }),
});

builder.objectFields(ASSET_TYPE, (t) => ({
  viewerCan: t.field({ type: AssetPermissionsRef, description: "What the caller may do on this asset", resolve: (a) => a }),
}));

const RUN_TYPE = "Run" as unknown as ReturnType<typeof builder.objectRef<RunSummary & Partial<Pick<RunDetail, "steps">>>>;
const BACKFILL_TYPE = "Backfill" as unknown as ReturnType<typeof builder.objectRef<BackfillRecord>>;

// The assets an action on a run or backfill is authorised on, as the commands scope them.
const ActionPermissionsRef = builder.objectRef<{ assetKeys: readonly string[] }>("ActionPermissions").implement({
  description: "What the caller may do on a run or a backfill",
  fields: (t) => ({
    operate: t.boolean({
      description: "Cancel it (a backfill: also resume it and re-run its failures): operator on every asset it materialises",
      resolve: (scope, _args, ctx) => ctx.guard.can("operator", scope.assetKeys),
    }),
  }),
});

builder.objectFields(RUN_TYPE, (t) => ({
  viewerCan: t.field({
    type: ActionPermissionsRef,
    description: "What the caller may do on this run (reads its steps; over a list, those of all its runs at once)",
    resolve: async (r, _args, ctx) => {
      const steps = await stepsOfRun(r, ctx);
      return { assetKeys: [...new Set(steps.map((s) => s.assetKey))] };
    },
  }),
}));

builder.objectFields(BACKFILL_TYPE, (t) => ({
  viewerCan: t.field({
    type: ActionPermissionsRef,
    description: "What the caller may do on this backfill",
    resolve: (b) => ({ assetKeys: [...b.selection.assetKeys] }),
  }),
}));

const AUDIT_OUTCOMES = ["success", "denied", "failed"] as const satisfies readonly AuditOutcome[];
const AuditOutcomeEnum = builder.enumType("AuditOutcome", {
  description: "How an audited request ended: done, refused (missing role, throttled), or authorised but failed",
  values: AUDIT_OUTCOMES,
});

const AuditTokenRef = builder.objectRef<AuditToken>("AuditToken").implement({
  description: "The API token a request was made with, as `tributary tokens list` shows it",
  fields: (t) => ({
    id: t.exposeString("id"),
    prefix: t.exposeString("prefix", { description: "Its first characters" }),
    description: t.exposeString("description"),
  }),
});

const AuditEventRef = builder.objectRef<AuditEvent>("AuditEvent").implement({
  description: "One audit record: a mutation or a sign-in, written with its effect",
  fields: (t) => ({
    id: t.exposeInt("id"),
    at: t.field({ type: "DateTime", resolve: (e) => e.at }),
    principal: t.exposeString("principalName", { nullable: true }),
    principalKind: t.exposeString("principalKind", {
      nullable: true,
      description: "user, service or local; null when nobody proven acted (a failed sign-in names what was typed)",
    }),
    tokenId: t.exposeString("tokenId", { nullable: true }),
    token: t.field({
      type: AuditTokenRef,
      nullable: true,
      description: "The API token used, while it exists",
      resolve: (e) => e.token,
    }),
    action: t.exposeString("action"),
    outcome: t.exposeString("outcome", { description: "success, denied or failed" }),
    reason: t.string({
      nullable: true,
      description: "Why it was denied or failed, in words (null on success)",
      resolve: (e) => auditReason(e),
    }),
    assets: t.exposeStringList("assets"),
    partitions: t.exposeStringList("partitions"),
    runIds: t.stringList({
      description: "The runs it created or acted on",
      resolve: (e) => [...idsIn(e.detail.runId), ...idsIn(e.detail.runIds)],
    }),
    backfillIds: t.stringList({ description: "The backfill it created or acted on", resolve: (e) => idsIn(e.detail.backfillId) }),
    address: t.exposeString("address", { nullable: true }),
    detail: t.field({ type: "JSON", resolve: (e) => e.detail }),
  }),
});

/** A refusal's missing role, a sign-in's reason, a failure's error code. */
function auditReason(e: AuditEvent): string | null {
  if (e.outcome === "success") return null;
  const { reason, missingRole, asset, error } = e.detail;
  if (typeof reason === "string") return reason;
  if (typeof missingRole === "string") {
    return typeof asset === "string" ? `needs the ${missingRole} role on asset "${asset}"` : `needs the ${missingRole} role without a team`;
  }
  if (typeof error === "string") return error;
  return null;
}

function idsIn(value: JsonValue | undefined): string[] {
  if (typeof value === "string") return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

const auditArgs = z.strictObject({
  since: z.date().optional(),
  principal: z.string().min(1).max(100).optional(),
  action: z.string().min(1).max(100).optional(),
  outcome: z.enum(AUDIT_OUTCOMES).optional(),
  before: z.number().int().positive().optional(),
  first: z.number().int().min(1).max(1000),
});

builder.queryFields((t) => ({
  me: t.field({ type: CallerRef, description: "Who this request was made as", resolve: (_root, _args, ctx) => ctx.guard.caller }),
  auditEvents: t.field({
    type: [AuditEventRef],
    description: "Audit records, newest first (admins only); page backwards with `before` (the last id seen)",
    args: {
      since: t.arg({ type: "DateTime" }),
      principal: t.arg.string(),
      action: t.arg.string(),
      outcome: t.arg({ type: AuditOutcomeEnum }),
      before: t.arg.int(),
      first: t.arg.int({ defaultValue: 100 }),
    },
    resolve: (_root, args, ctx) => {
      const q = parseInput(
        auditArgs,
        Object.fromEntries(Object.entries(args).filter(([, v]) => v !== null && v !== undefined)),
        "auditEvents",
        "",
      );
      return ctx.access.auditEvents(
        { since: q.since, principalName: q.principal, action: q.action, outcome: q.outcome, beforeId: q.before, limit: q.first },
        ctx.guard,
      );
    },
  }),
}));
