import pc from "picocolors";
import { formatKeyRanges, MAX_EVALUATIONS_LIMIT } from "../../api/views/index.js";
import type {
  AutomationEvaluations,
  AutomationEvaluationsRequest,
  AutomationEvaluationView,
  EvaluationReasonView,
  KeyRange,
} from "../../api/index.js";
import { InputError } from "../../errors/index.js";
import { printJson } from "../output.js";
import { graphql, serverFor } from "../server-client.js";
import { resolveSettings, type GlobalOptions, type Settings } from "../settings.js";
import type { WhyOptions } from "./why.js";

export async function runWhy(key: string, opts: WhyOptions, globals: GlobalOptions): Promise<void> {
  const limit = /^\d+$/.test(opts.limit) ? Number(opts.limit) : Number.NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_EVALUATIONS_LIMIT) {
    throw new InputError(`--limit: "${opts.limit}" must be a whole number from 1 to ${MAX_EVALUATIONS_LIMIT}`, {
      code: "INPUT_INVALID",
      location: { field: "--limit" },
    });
  }
  const settings = resolveSettings(globals);
  const request: AutomationEvaluationsRequest = { assetKey: key, partition: opts.partition, limit };
  const url = await serverFor(settings);
  const result = url ? await viaServer(url, request) : await inProcess(settings, request);
  if (opts.json) {
    printJson({ ok: true, ...result, records: result.records.map((r) => ({ ...r, evaluatedAt: r.evaluatedAt.toISOString() })) });
    return;
  }
  printHuman(result);
}

function printHuman(e: AutomationEvaluations): void {
  const out: string[] = [];
  out.push(e.condition ? `condition   ${e.condition}` : `no automation condition on ${e.assetKey}`);
  out.push(`automation  ${e.paused ? pc.yellow("paused") : "active"}`);
  if (e.partition !== null) out.push(`partition   ${e.partition}`);
  if (e.records.length > 0) out.push(`latest      ${e.summary}`);
  out.push("");
  if (e.records.length === 0) {
    out.push(e.condition ? "not evaluated yet" : "no evaluation records");
  } else {
    for (const r of e.records) {
      const partitions = describePartitions(r);
      const run = r.runId ? `  run ${r.runId}` : "";
      const decision = partitions || run ? colorDecision(r.decision, 9) : colorDecision(r.decision, 0);
      out.push(`${r.evaluatedAt.toISOString()}  ${decision}${partitions ? `  ${partitions}` : ""}${run}`);
      // The condition is shown per record only when it is not the current one (definitions changed since).
      if (r.condition && r.condition !== e.condition) out.push(`    ${pc.dim(`condition then: ${r.condition}`)}`);
      for (const reason of r.reasons) out.push(`    ${reasonLine(reason, r.partitions)}`);
    }
  }
  process.stdout.write(`${out.join("\n")}\n`);
}

function describePartitions(r: AutomationEvaluationView): string {
  const text = formatKeyRanges(r.partitions);
  if (!text) return "";
  return r.count !== null && r.count > 1 ? `${text} (${r.count} partitions)` : text;
}

function reasonLine(reason: EvaluationReasonView, recordRanges: readonly KeyRange[]): string {
  // A reason's partitions are worth showing only when they are a part of the record's.
  const own = reason.partitions && !sameRanges(reason.partitions, recordRanges) ? formatKeyRanges(reason.partitions) : "";
  return `${pc.dim(`${reason.operand}:`)} ${reason.detail}${own ? pc.dim(` [${own}]`) : ""}`;
}

function sameRanges(a: readonly KeyRange[], b: readonly KeyRange[]): boolean {
  return a.length === b.length && a.every(([x, y], i) => b[i]?.[0] === x && b[i]?.[1] === y);
}

function colorDecision(decision: AutomationEvaluationView["decision"], width: number): string {
  const padded = decision.padEnd(width);
  if (decision === "requested") return pc.green(padded);
  if (decision === "declined") return pc.yellow(padded);
  return pc.dim(padded);
}

async function inProcess(settings: Settings, request: AutomationEvaluationsRequest): Promise<AutomationEvaluations> {
  // The current definitions decide the condition and how partitions are matched.
  // Loaded only without a server: the database, loader and executor would slow every command's start.
  const { withCurrentDefinitions } = await import("../runtime.js");
  return withCurrentDefinitions(settings, (api) => api.automation.evaluations(request));
}

interface WireReason extends Omit<EvaluationReasonView, "eventId"> {
  eventId: string | null;
}
interface WireRecord extends Omit<AutomationEvaluationView, "id" | "evaluatedAt" | "reasons"> {
  id: string;
  evaluatedAt: string;
  reasons: WireReason[];
}

async function viaServer(url: string, request: AutomationEvaluationsRequest): Promise<AutomationEvaluations> {
  const data = await graphql<{ automationEvaluations: Omit<AutomationEvaluations, "records"> & { records: WireRecord[] } }>(
    url,
    `
      query ($assetKey: String!, $partition: String, $first: Int) {
        automationEvaluations(assetKey: $assetKey, partition: $partition, first: $first) {
          assetKey
          partition
          condition
          paused
          summary
          records {
            id
            tick
            evaluatedAt
            decision
            partitions
            count
            condition
            runId
            reasons {
              operand
              detail
              partitions
              upstream
              eventId
              tick
              runIds
            }
          }
        }
      }
    `,
    { assetKey: request.assetKey, partition: request.partition ?? null, first: request.limit ?? null },
  );
  const e = data.automationEvaluations;
  return {
    ...e,
    records: e.records.map((r) => ({
      ...r,
      id: Number(r.id),
      evaluatedAt: new Date(r.evaluatedAt),
      reasons: r.reasons.map((x) => ({ ...x, eventId: x.eventId === null ? null : Number(x.eventId) })),
    })),
  };
}
