import pc from "picocolors";
import { InputError } from "../../errors/index.js";
import { MAX_TRIGGER_PAGE, TRIGGER_STATUSES, type TriggerCounts, type TriggerStatus, type TriggerView } from "../../storage/index.js";
import { printJson, table } from "../output.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";
import { inTime, lastResultLine, triggerCall, triggerFor } from "../triggers-format.js";
import type { TriggersOptions } from "./triggers.js";
import { suggestKey } from "../../graph/index.js";
import { connectTriggers, type TriggersClient } from "../triggers-client.js";

/** `tributary triggers`: a summary by status, then the triggers, waiting ones first. */
export async function runTriggers(opts: TriggersOptions, globals: GlobalOptions): Promise<void> {
  const filter = parseOptions(opts);
  const client = await connectTriggers(resolveSettings(globals));
  try {
    const { status, limit, ...countFilter } = filter;
    const [page, counts] = await Promise.all([client.list(filter), client.counts(countFilter)]);
    if (Object.values(counts).every((n) => n === 0)) await checkFilter(client, countFilter);
    if (opts.json) return printJson({ ok: true, counts, triggers: page.nodes, hasMore: page.hasNextPage });
    process.stdout.write(`${summary(counts)}\n`);
    if (page.nodes.length === 0) return void process.stdout.write(`no ${status ? `${status} ` : ""}triggers\n`);
    const now = new Date();
    process.stdout.write(
      `${table(
        ["id", "kind", "for", "status", "checks", "last check", "next check", "timeout", "last result"],
        page.nodes.map((t) => row(t, now)),
      )}\n`,
    );
    if (page.hasNextPage) process.stdout.write(pc.dim(`more than ${limit}: narrow with --status/--asset/--kind or raise --limit\n`));
  } finally {
    await client.close();
  }
}

function parseOptions(opts: TriggersOptions): { status?: TriggerStatus; assetKey?: string; kind?: string; limit: number } {
  const limit = Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_TRIGGER_PAGE) {
    throw new InputError(`--limit: "${opts.limit}" must be a whole number from 1 to ${MAX_TRIGGER_PAGE}`);
  }
  if (opts.status !== undefined && !(TRIGGER_STATUSES as readonly string[]).includes(opts.status)) {
    throw new InputError(`--status: "${opts.status}" is not a trigger status; use one of ${TRIGGER_STATUSES.join(", ")}`);
  }
  for (const [flag, value] of [
    ["--asset", opts.asset],
    ["--kind", opts.kind],
  ] as const) {
    if (value === "") throw new InputError(`${flag}: must not be empty; leave it out to see all`);
  }
  return {
    limit,
    ...(opts.status ? { status: opts.status as TriggerStatus } : {}),
    ...(opts.asset ? { assetKey: opts.asset } : {}),
    ...(opts.kind ? { kind: opts.kind } : {}),
  };
}

/**
 * Nothing matched --asset or --kind: a misspelt value would otherwise read
 * as "no triggers". An asset must be defined (or have triggers of its own,
 * e.g. one since removed); a kind must be built in (custom kinds count once
 * they have triggers).
 */
async function checkFilter(client: TriggersClient, filter: { assetKey?: string; kind?: string }): Promise<void> {
  const { kind, assetKey } = filter;
  if (kind !== undefined && !(await hasTriggers(client, { kind }))) {
    const { builtInTriggers } = await import("../../trigger-checks/index.js");
    const kinds = Object.keys(builtInTriggers());
    if (!kinds.includes(kind)) {
      const near = suggestKey(kind, kinds);
      throw new InputError(
        `--kind: "${kind}" is not a trigger kind${near ? ` (did you mean "${near}"?)` : ""}; the built-in kinds are ${kinds.join(", ")}, ` +
          "and a custom kind (triggerKind) is known once it has triggers",
        { code: "TRIGGER_KIND_UNKNOWN", location: { field: "--kind" } },
      );
    }
  }
  if (assetKey !== undefined && !(await hasTriggers(client, { assetKey }))) {
    const keys = await client.assetKeys();
    if (!keys.includes(assetKey)) {
      const near = suggestKey(assetKey, keys);
      throw new InputError(`--asset: no asset has the key "${assetKey}"${near ? `; did you mean "${near}"?` : ""}`, {
        code: "GRAPH_UNKNOWN_ASSET",
        location: { field: "--asset", assetKey },
      });
    }
  }
}

async function hasTriggers(client: TriggersClient, filter: { assetKey?: string; kind?: string }): Promise<boolean> {
  return Object.values(await client.counts(filter)).some((n) => n > 0);
}

function summary(c: TriggerCounts): string {
  return TRIGGER_STATUSES.map((s) => `${c[s]} ${s.replace("_", " ")}`).join(", ");
}

function row(t: TriggerView, now: Date): string[] {
  return [
    String(t.id),
    triggerCall(t),
    triggerFor(t),
    colorStatus(t.status),
    String(t.attempts),
    t.lastCheckedAt?.toISOString() ?? "",
    t.nextCheckAt ? inTime(t.nextCheckAt, now) : "",
    t.timeoutAt?.toISOString() ?? "",
    lastResultLine(t),
  ];
}

function colorStatus(s: TriggerStatus): string {
  if (s === "fired") return pc.green(s);
  if (s === "failed" || s === "timed_out") return pc.red(s);
  if (s === "waiting") return pc.cyan(s);
  return pc.yellow(s);
}
