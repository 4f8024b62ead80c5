import pc from "picocolors";
import { localGuard } from "../../access/index.js";
import type { ErasurePlan, LineageApi, RequestErasureInput } from "../../api/index.js";
import { InputError, TributaryError } from "../../errors/index.js";
import {
  ERASURE_STATES,
  PgErasureStore,
  type ErasureDeletionRecord,
  type ErasureHookCallRecord,
  type ErasureItemRecord,
  type ErasureReport,
  type ErasureRequestRecord,
  type ErasureState,
} from "../../storage/index.js";
// Types only: the in-process pieces (database, loader, executor) are loaded when a command works without a server.
import type { Execution } from "../execution.js";
import type { Runtime } from "../runtime.js";
import { printJson, table } from "../output.js";
import { graphql, serverFor } from "../server-client.js";
import { resolveSettings, type GlobalOptions, type Settings } from "../settings.js";
import type { EraseListOptions, EraseOptions } from "./erase.js";

const ENDED: readonly ErasureState[] = ["done", "failed"];
/** The most requests one listing shows (MAX_ERASURE_LIST). */
const MAX_LIST = 500;
/** Partition keys named in a summary line; the rest are counted. */
const SHOWN = 5;

/** `tributary erase <asset-key> --partition K…`: the plan; carried out and followed with --wait (always, in-process). */
export async function runErase(key: string, opts: EraseOptions, globals: GlobalOptions): Promise<void> {
  const input: RequestErasureInput = {
    assetKey: key,
    partitionKeys: opts.partition ?? [],
    ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
    ...(opts.dryRun ? { dryRun: true } : {}),
  };
  // The impact is computed on the current definitions; without a server, follow() carries the request out here.
  const client = await connectErasures(resolveSettings(globals), "definitions");
  try {
    const plan = await client.request(input).catch(rethrowForCommandLine);
    const request = plan.request;
    if (request === null || !(opts.wait || client.where === "in-process")) {
      if (opts.json) printJson({ ok: true, ...plan });
      else printPlan(plan, { following: false });
      return;
    }
    if (!opts.json) printPlan(plan, { following: true });
    const final = await follow(client, request, Boolean(opts.json));
    if (opts.json) printJson({ ok: final.state === "done", ...failure(final), ...plan, request: final });
    else await printOutcome(client, final);
    process.exitCode = final.state === "done" ? 0 : final.state === "failed" ? 1 : 130;
  } finally {
    await client.close();
  }
}

/** `tributary erase show <id>`: the proof report. */
export async function runEraseShow(id: string, opts: GlobalOptions & EraseOptions): Promise<void> {
  const client = await connectErasures(resolveSettings(opts), "read");
  try {
    const report = await client.report(id).catch(rethrowForCommandLine);
    if (opts.json) printJson({ ok: true, ...report });
    else printReport(report);
  } finally {
    await client.close();
  }
}

/** `tributary erase list [--state S] [--limit N]`. */
export async function runEraseList(opts: EraseListOptions, globals: GlobalOptions & EraseOptions): Promise<void> {
  const text = opts.limit ?? "50";
  const limit = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST) {
    throw new InputError(`--limit: "${text}" must be a whole number from 1 to ${MAX_LIST}`, { code: "ERASURE_LIST_LIMIT" });
  }
  if (opts.state !== undefined && !ERASURE_STATES.includes(opts.state as ErasureState)) {
    throw new InputError(`--state: "${opts.state}" is not an erasure state; use one of ${ERASURE_STATES.join(", ")}`);
  }
  const state = opts.state as ErasureState | undefined;
  const client = await connectErasures(resolveSettings(globals), "read");
  try {
    const requests = await client.list({ limit, ...(state ? { state } : {}) });
    if (globals.json) return printJson({ ok: true, requests });
    if (requests.length === 0) {
      process.stdout.write(state ? `no erasure requests are ${state}\n` : "no erasure requests yet\n");
      return;
    }
    process.stdout.write(
      `${table(
        ["request", "state", "asset", "partitions", "erased", "requested by", "created"],
        requests.map((r) => [
          r.id,
          stateText(r.state),
          r.assetKey,
          keysText(r.partitionKeys),
          `${r.erasedCount}/${r.itemCount}`,
          r.requestedBy ?? "-",
          r.createdAt.toISOString(),
        ]),
      )}\n`,
    );
  } finally {
    await client.close();
  }
}

/** `tributary erase retry <id>`: a failed request goes on; followed like a new one. */
export async function runEraseRetry(id: string, opts: GlobalOptions & EraseOptions): Promise<void> {
  // The current definitions: a hook fixed since the failure is the one called.
  const client = await connectErasures(resolveSettings(opts), "definitions");
  try {
    const request = await client.retry(id).catch(rethrowForCommandLine);
    if (!(opts.wait || client.where === "in-process")) {
      if (opts.json) printJson({ ok: true, request });
      else {
        process.stdout.write(`erasure request ${request.id} is ${request.state} again\n`);
        process.stdout.write(`a running reconciler goes on with it; follow it with \`tributary erase show ${request.id}\`\n`);
      }
      return;
    }
    if (!opts.json) process.stdout.write(`erasure request ${request.id} is ${request.state} again\n`);
    const final = await follow(client, request, Boolean(opts.json));
    if (opts.json) printJson({ ok: final.state === "done", ...failure(final), request: final });
    else await printOutcome(client, final);
    process.exitCode = final.state === "done" ? 0 : final.state === "failed" ? 1 : 130;
  } finally {
    await client.close();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Following a request

/**
 * Polls the request until it is done or failed, printing each change of state (or of what it waits for); the first
 * Ctrl-C stops waiting (the request goes on wherever a reconciler runs) and answers the request as it was.
 */
async function follow(client: ErasuresClient, start: ErasureRequestRecord, json: boolean): Promise<ErasureRequestRecord> {
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
  };
  process.once("SIGINT", onSignal);
  const say = (line: string) => (json ? process.stderr : process.stdout).write(`${line}\n`);
  if (client.where === "in-process") {
    process.stderr.write(
      `${pc.dim("no server is running: carrying out the erasure in this process (Ctrl-C stops waiting; `tributary dev` goes on with it later)")}\n`,
    );
  }
  await client.carryOut();
  let shown = "";
  let current = start;
  try {
    for (let delay = 100; ; delay = Math.min(client.where === "server" ? 2_000 : 1_000, delay * 1.5)) {
      const line = progressLine(current);
      if (line !== shown) {
        say(line);
        shown = line;
      }
      if (ENDED.includes(current.state)) return current;
      if (interrupted) {
        say(
          `stopped waiting: request ${current.id} is ${current.state}; a running reconciler (\`tributary dev\` or \`tributary reconciler\`) ` +
            `goes on with it; see \`tributary erase show ${current.id}\``,
        );
        return current;
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
      current = await client.get(current.id);
    }
  } finally {
    process.off("SIGINT", onSignal);
  }
}

function progressLine(r: ErasureRequestRecord): string {
  const counts = `${r.erasedCount}/${r.itemCount} partition(s) erased`;
  const backfill = r.state === "rematerialising" && r.backfillId ? `, backfill ${r.backfillId}` : "";
  return `${stateText(r.state)} (${counts}${backfill})${r.message && r.state !== "failed" ? `: ${r.message}` : ""}`;
}

function failure(final: ErasureRequestRecord): { error?: { code: string; message: string } } {
  return final.state === "failed" ? { error: { code: "ERASURE_FAILED", message: failedMessage(final) } } : {};
}

function failedMessage(r: ErasureRequestRecord): string {
  return `erasure request ${r.id} failed: ${r.message ?? "no reason was recorded"} (\`tributary erase retry ${r.id}\`)`;
}

/** After following: done (with the proof's totals), failed (one error line, exit code 1), or still going. */
async function printOutcome(client: ErasuresClient, final: ErasureRequestRecord): Promise<void> {
  if (final.state === "failed") {
    process.stderr.write(`${pc.red("error")} ${pc.dim("[ERASURE_FAILED]")} ${failedMessage(final)}\n`);
    return;
  }
  if (final.state !== "done") return;
  const report = await client.report(final.id);
  const replaced = report.items.filter((i) => i.replacedByEventId !== null).length;
  process.stdout.write(
    `erasure request ${final.id} done: ${final.erasedCount}/${final.itemCount} partition(s) erased, ${deletionsText(report.deletions)}, ` +
      `${report.hookCalls.length} erase hook call(s), ${replaced} partition(s) re-materialised\n`,
  );
  process.stdout.write(`the proof: \`tributary erase show ${final.id}\`\n`);
}

// ---------------------------------------------------------------------------------------------------------------
// Printing

function printPlan(plan: ErasurePlan, options: { following: boolean }): void {
  const out = process.stdout;
  const source = sourceText(plan.assetKey, plan.partitionKeys);
  out.write(plan.request ? `erasure request ${plan.request.id}: ${source}\n` : `would erase ${source}\n`);
  out.write(
    `  ${plan.partitionCount} partition(s) of ${plan.assets.length} asset(s) erased, ${plan.outputCount} with a stored output ` +
      `(deleted with its objects and logs)\n`,
  );
  out.write(
    `${indent(
      table(
        ["asset", "partitions", "pii", "erase hook"],
        plan.assets.map((a) => [
          a.defined ? a.assetKey : `${a.assetKey} ${pc.dim("(no longer defined: not re-materialised)")}`,
          String(a.partitionCount),
          a.pii === null ? "-" : "yes",
          a.eraseHook ? "yes" : "-",
        ]),
      ),
    )}\n`,
  );
  if (!plan.request) {
    out.write("nothing was recorded (--dry-run)\n");
    return;
  }
  if (!options.following) out.write(`the reconcilers carry it out; follow it with \`tributary erase show ${plan.request.id}\`\n`);
}

function printReport(report: ErasureReport): void {
  const r = report.request;
  const out = process.stdout;
  out.write(`erasure request ${r.id}: ${stateText(r.state)}\n`);
  const rows: [string, string][] = [
    ["source", sourceText(r.assetKey, r.partitionKeys)],
    ["reason", r.reason ?? "-"],
    ["requested", `${r.createdAt.toISOString()}${r.requestedBy ? ` by ${r.requestedBy}` : ""}`],
    ["finished", r.finishedAt?.toISOString() ?? "-"],
    ["erased", `${r.erasedCount}/${r.itemCount} partition(s); ${deletionsText(report.deletions)}`],
    ["hooks", `${report.hookCalls.length} call(s)`],
    ["backfill", r.backfillId ?? "-"],
    ["attempts", String(r.attempts)],
  ];
  if (r.message) rows.push(["message", r.message]);
  for (const [label, value] of rows) out.write(`  ${label.padEnd(11)}${value}\n`);

  out.write(`\n${pc.bold(`deleted (${report.deletions.length})`)}\n`);
  if (report.deletions.length > 0) out.write(`${deletionsTable(report.deletions)}\n`);
  out.write(`\n${pc.bold(`erase hook calls (${report.hookCalls.length})`)}\n`);
  if (report.hookCalls.length > 0) out.write(`${hookCallsTable(report.hookCalls)}\n`);
  for (const call of report.hookCalls) {
    for (const line of call.log) out.write(`  ${pc.dim(`${call.assetKey} #${call.attempt}:`)} ${line}\n`);
  }
  out.write(`\n${pc.bold(`partitions and their replacements (${report.items.length})`)}\n`);
  if (report.items.length > 0) out.write(`${itemsTable(report.items)}\n`);
}

function deletionsTable(deletions: readonly ErasureDeletionRecord[]): string {
  return table(
    ["kind", "asset", "partition", "run", "step", "try", "ref", "size", "deleted"],
    deletions.map((d) => [
      d.kind,
      d.assetKey,
      keyText(d.partitionKey),
      d.runId ?? "-",
      d.stepId === null ? "-" : String(d.stepId),
      d.tryNumber === null ? "-" : String(d.tryNumber),
      d.ref ?? "-",
      d.sizeBytes === null ? "-" : bytesText(d.sizeBytes),
      d.deletedAt.toISOString(),
    ]),
  );
}

function hookCallsTable(calls: readonly ErasureHookCallRecord[]): string {
  return table(
    ["asset", "partitions", "attempt", "state", "started", "ended", "error"],
    calls.map((c) => [
      c.assetKey,
      keysText(c.partitionKeys),
      String(c.attempt),
      c.state === "failed" ? pc.red(c.state) : c.state,
      c.startedAt.toISOString(),
      c.endedAt?.toISOString() ?? "-",
      c.error ?? "-",
    ]),
  );
}

function itemsTable(items: readonly ErasureItemRecord[]): string {
  return table(
    ["asset", "partition", "held by (event, run)", "erased", "replaced by (event, run)", "replaced"],
    items.map((i) => [
      i.assetKey,
      keyText(i.partitionKey),
      i.eventId === null ? "-" : `${i.eventId}, ${i.runId ?? "-"}`,
      i.erasedAt?.toISOString() ?? "-",
      i.replacedByEventId !== null
        ? `${i.replacedByEventId}, ${i.replacedByRunId ?? "-"}`
        : i.skippedReason
          ? pc.dim(`not re-materialised: ${i.skippedReason}`)
          : "-",
      i.replacedAt?.toISOString() ?? "-",
    ]),
  );
}

function deletionsText(deletions: readonly ErasureDeletionRecord[]): string {
  const count = (kind: ErasureDeletionRecord["kind"]) => deletions.filter((d) => d.kind === kind).length;
  // An object is its output's bytes: counted once, with the output.
  const bytes = deletions.reduce((sum, d) => sum + (d.kind === "object" ? 0 : (d.sizeBytes ?? 0)), 0);
  return `${count("output")} output(s), ${count("object")} object(s) and ${count("log")} log(s) deleted (${bytesText(bytes)})`;
}

function stateText(state: ErasureState): string {
  return state === "done" ? pc.green(state) : state === "failed" ? pc.red(state) : pc.yellow(state);
}

function sourceText(assetKey: string, partitionKeys: readonly string[]): string {
  const keys = partitionKeys.filter((k) => k !== "");
  if (keys.length === 0) return `"${assetKey}"`;
  const named = keys
    .slice(0, SHOWN)
    .map((k) => `"${k}"`)
    .join(", ");
  return `${keys.length} partition(s) of "${assetKey}": ${named}${keys.length > SHOWN ? ", …" : ""}`;
}

function keysText(keys: readonly string[]): string {
  const named = keys.filter((k) => k !== "");
  if (named.length === 0) return "-";
  return named.length <= 3 ? named.join(", ") : `${named.slice(0, 2).join(", ")} and ${named.length - 2} more`;
}

const keyText = (key: string): string => (key === "" ? "-" : key);

function bytesText(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(1)} GiB`;
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");
}

/**
 * On the command line a refusal's message already names the asset and the key: the API field it came from
 * (`partitionKeys`, `id`) would only add a second line naming a field the user never typed.
 */
function rethrowForCommandLine(err: unknown): never {
  if (!(err instanceof TributaryError) || err.location?.field === undefined) throw err;
  const { field: _field, ...location } = err.location;
  const shown = new TributaryError(err.code, err.message, {
    ...(err.cause !== undefined ? { cause: err.cause } : {}),
    ...(Object.keys(location).length > 0 ? { location } : {}),
  });
  shown.name = err.name;
  throw shown;
}

// ---------------------------------------------------------------------------------------------------------------
// Clients: a running server's API, or this process

interface ErasuresClient {
  readonly where: "server" | "in-process";
  request(input: RequestErasureInput): Promise<ErasurePlan>;
  /** The request as it is now (ERASURE_NOT_FOUND when unknown). */
  get(id: string): Promise<ErasureRequestRecord>;
  report(id: string): Promise<ErasureReport>;
  list(options: { limit: number; state?: ErasureState }): Promise<ErasureRequestRecord[]>;
  retry(id: string): Promise<ErasureRequestRecord>;
  /** Makes sure something carries requests out: a server has its reconcilers; this process starts one. */
  carryOut(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The server at --url when one answers; otherwise this process: `read` opens the database, `definitions` also brings
 * its definitions up to date (the impact is computed on them, and the erase hooks called are theirs).
 */
async function connectErasures(settings: Settings, need: "read" | "definitions"): Promise<ErasuresClient> {
  const url = await serverFor(settings);
  if (url) return new ServerErasuresClient(url);
  const { openRuntime, openWithCurrentDefinitions } = await import("../runtime.js");
  if (need === "read") return new InProcessErasuresClient(await openRuntime(settings));
  const { runtime, sync } = await openWithCurrentDefinitions(settings);
  for (const f of sync.result.files) {
    if (f.status === "error") process.stderr.write(`warning: ${f.error?.message ?? f.file}\n`);
  }
  return new InProcessErasuresClient(runtime);
}

class InProcessErasuresClient implements ErasuresClient {
  readonly where = "in-process" as const;
  private readonly erasures: LineageApi["erasures"];
  private execution: Execution | undefined;

  constructor(private readonly runtime: Runtime) {
    // The same commands the API runs, wired once in the runtime.
    this.erasures = runtime.apiContext().lineage.erasures;
  }

  request(input: RequestErasureInput): Promise<ErasurePlan> {
    return this.erasures.request(input, localGuard());
  }

  /**
   * A reconciler (its erasure task deletes, calls the hooks and launches the re-materialisation; its backfill task
   * paces that) and the local executor (which runs it), until close(); started only once a request is there to
   * carry out, so a refused one costs no worker processes.
   */
  async carryOut(): Promise<void> {
    if (this.execution) return;
    const { startExecution } = await import("../execution.js");
    this.execution = await startExecution(this.runtime, {
      // Nothing else may be checking waits of the re-materialisation's steps (the embedded database is this process's alone).
      triggerer: true,
      log: (level, message) => {
        if (level !== "info") process.stderr.write(`[${level}] ${message}\n`);
      },
    });
  }

  async get(id: string): Promise<ErasureRequestRecord> {
    // The report holds every item and deletion: while following, only the request is read.
    const request = await new PgErasureStore(this.runtime.database.db).get(id);
    if (!request) throw new InputError(`no erasure request ${id}`, { code: "ERASURE_NOT_FOUND" });
    return request;
  }

  report(id: string): Promise<ErasureReport> {
    return this.erasures.report(id, localGuard());
  }

  list(options: { limit: number; state?: ErasureState }): Promise<ErasureRequestRecord[]> {
    return this.erasures.list(options, localGuard());
  }

  retry(id: string): Promise<ErasureRequestRecord> {
    return this.erasures.retry(id, localGuard());
  }

  async close(): Promise<void> {
    await this.execution?.stop({ graceMs: 2_000 });
    await this.runtime.close();
  }
}

const REQUEST_FIELDS =
  "id state assetKey partitionKeys reason requestedBy backfillId message attempts createdAt updatedAt finishedAt itemCount erasedCount";
const REPORT_FIELDS = `
  request { ${REQUEST_FIELDS} }
  items { assetKey partitionKey eventId runId stepId erasedAt replacement { eventId runId materializedAt } skippedReason }
  deletions { kind assetKey partitionKey runId stepId tryNumber ref sizeBytes deletedAt }
  hookCalls { id assetKey partitionKeys attempt state startedAt endedAt error log }`;

type Dated<T, K extends keyof T> = Omit<T, K> & { [P in K]: T[P] extends Date ? string : string | null };
type WireRequest = Dated<ErasureRequestRecord, "createdAt" | "updatedAt" | "finishedAt">;
interface WireItem extends Omit<
  ErasureItemRecord,
  "eventId" | "stepId" | "erasedAt" | "replacedByEventId" | "replacedByRunId" | "replacedAt"
> {
  eventId: string | null;
  stepId: string | null;
  erasedAt: string | null;
  replacement: { eventId: string; runId: string | null; materializedAt: string | null } | null;
}
interface WireDeletion extends Omit<ErasureDeletionRecord, "stepId" | "deletedAt"> {
  stepId: string | null;
  deletedAt: string;
}
interface WireHookCall extends Omit<ErasureHookCallRecord, "id" | "startedAt" | "endedAt"> {
  id: string;
  startedAt: string;
  endedAt: string | null;
}
interface WireReport {
  request: WireRequest;
  items: WireItem[];
  deletions: WireDeletion[];
  hookCalls: WireHookCall[];
}
type WirePlan = Omit<ErasurePlan, "request"> & { request: WireRequest | null };

const numberOrNull = (v: string | null): number | null => (v === null ? null : Number(v));
const dateOrNull = (v: string | null): Date | null => (v === null ? null : new Date(v));

function requestFromWire(r: WireRequest): ErasureRequestRecord {
  return { ...r, createdAt: new Date(r.createdAt), updatedAt: new Date(r.updatedAt), finishedAt: dateOrNull(r.finishedAt) };
}

function reportFromWire(r: WireReport): ErasureReport {
  return {
    request: requestFromWire(r.request),
    items: r.items.map(({ replacement, ...i }) => ({
      ...i,
      eventId: numberOrNull(i.eventId),
      stepId: numberOrNull(i.stepId),
      erasedAt: dateOrNull(i.erasedAt),
      replacedByEventId: replacement ? Number(replacement.eventId) : null,
      replacedByRunId: replacement?.runId ?? null,
      replacedAt: dateOrNull(replacement?.materializedAt ?? null),
    })),
    deletions: r.deletions.map((d) => ({ ...d, stepId: numberOrNull(d.stepId), deletedAt: new Date(d.deletedAt) })),
    hookCalls: r.hookCalls.map((c) => ({ ...c, id: Number(c.id), startedAt: new Date(c.startedAt), endedAt: dateOrNull(c.endedAt) })),
  };
}

class ServerErasuresClient implements ErasuresClient {
  readonly where = "server" as const;

  constructor(private readonly url: string) {}

  async request(input: RequestErasureInput): Promise<ErasurePlan> {
    const data = await graphql<{ requestErasure: WirePlan }>(
      this.url,
      `mutation ($input: RequestErasureInput!) {
        requestErasure(input: $input) {
          request { ${REQUEST_FIELDS} }
          assetKey partitionKeys assets { assetKey pii defined partitionCount eraseHook } partitionCount outputCount dryRun
        }
      }`,
      { input },
    );
    const plan = data.requestErasure;
    return { ...plan, request: plan.request && requestFromWire(plan.request) };
  }

  async get(id: string): Promise<ErasureRequestRecord> {
    const data = await graphql<{ erasureRequest: { request: WireRequest } }>(
      this.url,
      `query ($id: ID!) { erasureRequest(id: $id) { request { ${REQUEST_FIELDS} } } }`,
      { id },
    );
    return requestFromWire(data.erasureRequest.request);
  }

  async report(id: string): Promise<ErasureReport> {
    const data = await graphql<{ erasureRequest: WireReport }>(
      this.url,
      `query ($id: ID!) { erasureRequest(id: $id) { ${REPORT_FIELDS} } }`,
      { id },
    );
    return reportFromWire(data.erasureRequest);
  }

  async list(options: { limit: number; state?: ErasureState }): Promise<ErasureRequestRecord[]> {
    const data = await graphql<{ erasureRequests: WireRequest[] }>(
      this.url,
      `query ($limit: Int, $state: ErasureState) { erasureRequests(limit: $limit, state: $state) { ${REQUEST_FIELDS} } }`,
      { limit: options.limit, state: options.state ?? null },
    );
    return data.erasureRequests.map(requestFromWire);
  }

  async retry(id: string): Promise<ErasureRequestRecord> {
    const data = await graphql<{ retryErasure: WireRequest }>(
      this.url,
      `mutation ($id: ID!) { retryErasure(id: $id) { ${REQUEST_FIELDS} } }`,
      { id },
    );
    return requestFromWire(data.retryErasure);
  }

  async carryOut(): Promise<void> {}

  async close(): Promise<void> {}
}
