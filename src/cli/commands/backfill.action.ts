import pc from "picocolors";
import { InputError } from "../../errors/index.js";
import type { BackfillStatus } from "../../storage/index.js";
import { connectBackfills, type BackfillsClient, type BackfillView } from "../backfills-client.js";
import { progressBar } from "../follow-run.js";
import { positiveInt } from "../options.js";
import { printJson, table } from "../output.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";
import type { BackfillOptions } from "./backfill.js";
import { inFlags, parseDims } from "./dimension-option.js";

const STATUSES: readonly BackfillStatus[] = ["requested", "running", "completed", "failed", "canceling", "canceled"];
const ENDED: readonly BackfillStatus[] = ["completed", "failed", "canceled"];

/** `tributary backfill <keys…>`: launch, and with --wait (always, in-process) follow it to the end. */
export async function runBackfill(keys: string[], opts: BackfillOptions, globals: GlobalOptions): Promise<void> {
  const maxConcurrentRuns = positiveInt(opts.maxRuns, "--max-runs");
  const maxPartitionsPerRun = positiveInt(opts.maxPartitionsPerRun, "--max-partitions-per-run");
  const dimensions = parseDims(opts.dim);
  await withClient(globals, opts, true, async (client) =>
    client
      .launch({
        assetKeys: keys,
        from: opts.from,
        to: opts.to,
        partitions: opts.partition,
        allPartitions: opts.all,
        dimensions,
        includeUpstream: opts.includeUpstream,
        maxConcurrentRuns,
        maxPartitionsPerRun,
      })
      .catch((err: unknown) => {
        throw inFlags(err, "a range --from <key> --to <key>, --partition <key...>, --all, or per dimension --dim <dimension=keys>");
      }),
  );
}

/** `backfill cancel|resume|retry-failed <id>`. */
export async function runBackfillControl(
  action: "cancel" | "resume" | "retry-failed",
  id: string,
  opts: GlobalOptions & BackfillOptions,
): Promise<void> {
  // Cancel only records the request; resume and retry create work that someone must run.
  await withClient(opts, opts, action !== "cancel", (client) =>
    action === "cancel" ? client.cancel(id) : action === "resume" ? client.resume(id) : client.retryFailed(id),
  );
}

export async function runBackfillShow(id: string, opts: GlobalOptions & BackfillOptions): Promise<void> {
  const client = await connectBackfills(resolveSettings(opts));
  try {
    const backfill = await requireBackfill(client, id);
    if (opts.json) printJson({ ok: true, backfill });
    else printBackfill(backfill);
  } finally {
    await client.close();
  }
}

export async function runBackfills(opts: { status?: string; limit: string; json?: boolean }, globals: GlobalOptions): Promise<void> {
  const limit = Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw new InputError(`--limit: "${opts.limit}" must be a whole number from 1 to 1000`);
  if (opts.status !== undefined && !STATUSES.includes(opts.status as BackfillStatus)) {
    throw new InputError(`--status: "${opts.status}" is not a backfill status; use one of ${STATUSES.join(", ")}`);
  }
  const client = await connectBackfills(resolveSettings(globals));
  try {
    const backfills = await client.list({ limit, ...(opts.status ? { status: opts.status as BackfillStatus } : {}) });
    if (opts.json) return printJson({ backfills });
    if (backfills.length === 0) return void process.stdout.write("no backfills yet\n");
    process.stdout.write(
      `${table(
        ["backfill", "status", "assets", "partitions", "done", "failed", "created"],
        backfills.map((b) => [
          b.id,
          colorStatus(b.status),
          b.assetKeys.join(", "),
          selectionText(b),
          `${b.done}/${b.requested}`,
          String(b.failed),
          b.createdAt,
        ]),
      )}\n`,
    );
  } finally {
    await client.close();
  }
}

/**
 * Connects (server, or in-process with a reconciler when `execute`), does
 * `act`, then prints the backfill, or follows it when asked to wait (always
 * when this process is the one running it). Exit code 1 when partitions
 * failed or it was canceled; the first Ctrl-C cancels the backfill.
 */
async function withClient(
  globals: GlobalOptions,
  opts: BackfillOptions,
  execute: boolean,
  act: (client: BackfillsClient) => Promise<BackfillView>,
): Promise<void> {
  const processes = positiveInt(opts.processes, "--processes");
  const client = await connectBackfills(resolveSettings(globals), { execute, ...(processes ? { processes } : {}) });
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
  };
  process.once("SIGINT", onSignal);
  try {
    const backfill = await act(client);
    const wait = execute && (opts.wait === true || client.where === "in-process") && !ENDED.includes(backfill.status);
    if (!wait) {
      if (opts.json) printJson({ ok: true, backfill });
      else {
        printBackfill(backfill);
        if (!ENDED.includes(backfill.status)) process.stdout.write(`follow it with \`tributary backfill show ${backfill.id}\`\n`);
      }
      return;
    }
    if (!opts.wait && !opts.json) process.stderr.write(pc.dim("no server is running: running the backfill in this process\n"));
    const final = await follow(client, backfill, { progress: !opts.json && process.stderr.isTTY === true, interrupted: () => interrupted });
    if (opts.json) printJson({ ok: final.status === "completed", backfill: final });
    else printBackfill(final);
    process.exitCode = final.status === "completed" ? 0 : 1;
  } finally {
    process.off("SIGINT", onSignal);
    await client.close();
  }
}

/** Polls until the backfill ends, drawing partitions done/failed/in progress. */
async function follow(
  client: BackfillsClient,
  backfill: BackfillView,
  options: { progress: boolean; interrupted: () => boolean },
): Promise<BackfillView> {
  const bar = options.progress ? progressBar("partitions") : undefined;
  bar?.start(backfill.requested, 0, { ok: 0, failed: 0, running: 0 });
  let canceled = false;
  try {
    for (let delay = 50; ; delay = Math.min(500, delay * 1.5)) {
      const now = await requireBackfill(client, backfill.id);
      bar?.update(now.done + now.failed, { ok: now.done, failed: now.failed, running: now.inProgress });
      if (ENDED.includes(now.status)) return now;
      if (options.interrupted() && !canceled) {
        canceled = true;
        process.stderr.write("\ncanceling the backfill (Ctrl-C)…\n");
        await client.cancel(backfill.id);
      }
      await new Promise((r) => setTimeout(r, delay));
    }
  } finally {
    bar?.stop();
  }
}

async function requireBackfill(client: BackfillsClient, id: string): Promise<BackfillView> {
  const b = await client.get(id);
  if (!b)
    throw new InputError(`no backfill has the id "${id}"; list backfills with \`tributary backfills\``, { code: "BACKFILL_NOT_FOUND" });
  return b;
}

/** A backfill, for people. */
function printBackfill(b: BackfillView): void {
  const lines = [
    `backfill ${b.id}: ${colorStatus(b.status)} — ${b.done}/${b.requested} partitions done, ${b.failed} failed, ${b.inProgress} in progress` +
      (b.covered > 0 ? ` (${b.covered} already materialised by other runs)` : ""),
    `  assets: ${b.assetKeys.join(", ")}`,
    `  partitions: ${selectionText(b)}${b.retryOf ? ` (the failures of backfill ${b.retryOf})` : ""}`,
    `  pacing: ${b.maxConcurrentRuns} run(s) at once, ${b.maxPartitionsPerRun} partition(s) per run, priority ${b.priority}; ${b.runsCreated} of ~${b.chunks} run(s) created`,
  ];
  if (b.waiting) lines.push(`  waiting: ${b.waiting}`);
  const error = b.error as { message?: string } | null;
  if (error?.message) lines.push(`  ${pc.red("error")}: ${error.message}`);
  for (const f of b.failedPartitions) {
    const ranges = f.ranges.map((r) => (r.from === r.to ? r.from || "(unpartitioned)" : `${r.from}…${r.to}`));
    lines.push(`  ${pc.red("failed")} ${f.assetKey}: ${f.count} (${ranges.slice(0, 5).join(", ")}${ranges.length > 5 ? ", …" : ""})`);
  }
  if (b.failedPartitions.length > 0 && ENDED.includes(b.status))
    lines.push(`  re-run them with \`tributary backfill retry-failed ${b.id}\``);
  if (b.status === "canceled") lines.push(`  resume it with \`tributary backfill resume ${b.id}\``);
  process.stdout.write(`${lines.join("\n")}\n`);
}

function selectionText(b: BackfillView): string {
  if (b.dimensions) return b.dimensions.map(dimensionText).join(", ");
  if (b.partitions)
    return b.partitions.length <= 3 ? b.partitions.join(", ") : `${b.partitions.slice(0, 3).join(", ")}, … (${b.partitions.length})`;
  if (b.from !== null || b.to !== null) return `${b.from ?? "first"} … ${b.to ?? "latest"}`;
  return b.retryOf ? "failed ones" : "all";
}

function colorStatus(s: string): string {
  if (s === "completed") return pc.green(s);
  if (s === "failed") return pc.red(s);
  if (s === "running" || s === "requested") return pc.cyan(s);
  return pc.yellow(s);
}

/** `region=eu,us` or `date=2025-03-02..2025-03-08`: as --dim takes it. */
function dimensionText(d: NonNullable<BackfillView["dimensions"]>[number]): string {
  return `${d.name}=${d.keys ? d.keys.join(",") : `${d.from ?? ""}..${d.to ?? ""}`}`;
}
