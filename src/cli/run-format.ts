// How runs read for people: a run with its steps as a table, status colours, durations.
import pc from "picocolors";
import type { FailureClass } from "../errors/index.js";
import type { RunSummary } from "../storage/index.js";
import { table } from "./output.js";
import type { RunView, StepView } from "./runs-client.js";
import { describeWait } from "./triggers-format.js";

/** A run with its steps, for people; a deferred step also says what it waits for. */
export function printRun(run: RunView): void {
  process.stdout.write(
    `run ${run.id}: ${colorStatus(run.status)} — ${run.stepsDone}/${run.stepsTotal} steps done, ${run.stepsFailed} failed, ` +
      `${duration(run)}\n`,
  );
  process.stdout.write(
    `${table(
      ["asset", "partition", "state", "try", "started", "ms", "error"],
      inPlanOrder(run.steps).map((s) => [
        stepName(s),
        s.partitionKey || "-",
        colorStatus(s.state),
        `${s.tryNumber}/${s.maxTries}`,
        s.startedAt?.toISOString() ?? "",
        s.startedAt && s.endedAt ? String(s.endedAt.getTime() - s.startedAt.getTime()) : "",
        errorLine(s.error) ?? s.skipReason ?? (s.mapCount !== null ? `fanned out into ${s.mapCount} mapped step(s)` : ""),
      ]),
    )}\n`,
  );
  const failedTries = inPlanOrder(run.steps).flatMap((s) =>
    s.tries
      .filter((t) => t.state === "failed")
      .map((t) => [stepName(s), s.partitionKey || "-", String(t.tryNumber), failureClassLabel(t.failureClass), errorLine(t.error) ?? ""]),
  );
  if (failedTries.length > 0) {
    // Whose fault each failure was: only the user's count against the asset's retries.
    process.stdout.write(`failed tries:\n${table(["asset", "partition", "try", "failure", "error"], failedTries)}\n`);
  }
  const now = new Date();
  for (const s of run.steps) {
    if (s.state !== "deferred" || !s.waitingFor) continue;
    const step = s.partitionKey ? `${s.assetKey} ${s.partitionKey}` : s.assetKey;
    process.stdout.write(`${step}: ${colorStatus("deferred")} — ${describeWait(s.waitingFor, now)}\n`);
  }
}

/** `asset`, `asset [check name]`, or for a mapped step `asset [index label]`. */
export function stepName(s: Pick<StepView, "assetKey" | "checkName" | "mapIndex" | "mapLabel">): string {
  if (s.checkName) return `${s.assetKey} [check ${s.checkName}]`;
  if (s.mapIndex >= 0) return `${s.assetKey} [${s.mapIndex}${s.mapLabel ? ` ${s.mapLabel}` : ""}]`;
  return s.assetKey;
}

/** Steps as planned, each step's mapped steps (which join the run later) right after it, in item order. */
export function inPlanOrder<S extends Pick<StepView, "assetKey" | "partitionKey" | "mapIndex" | "checkName">>(steps: readonly S[]): S[] {
  const key = (s: S) => `${s.assetKey}\u0000${s.partitionKey}`;
  const mapped = new Map<string, S[]>();
  for (const s of steps) {
    if (s.mapIndex < 0 || s.checkName !== null) continue;
    const list = mapped.get(key(s)) ?? [];
    list.push(s);
    mapped.set(key(s), list);
  }
  if (mapped.size === 0) return [...steps];
  const out: S[] = [];
  for (const s of steps) {
    if (s.mapIndex >= 0 && s.checkName === null) continue;
    out.push(s);
    if (s.checkName === null) out.push(...(mapped.get(key(s)) ?? []).sort((a, b) => a.mapIndex - b.mapIndex));
  }
  return out;
}

/** How long the run took, or has been running: "840 ms", "12.3 s"; empty before it started. */
export function duration(r: RunSummary): string {
  if (!r.startedAt) return "";
  const ms = (r.endedAt ?? new Date()).getTime() - r.startedAt.getTime();
  return ms < 10_000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** A run's or a step's status in its colour: green success, red failure, cyan under way, yellow otherwise. */
export function colorStatus(s: string): string {
  if (s === "success") return pc.green(s);
  if (s === "failed" || s === "upstream_failed") return pc.red(s);
  if (s === "running" || s === "queued") return pc.cyan(s);
  return pc.yellow(s);
}

/** `user` or `infrastructure` (in yellow: it did not use up the asset's retries); `-` for a try recorded without one. */
export function failureClassLabel(failureClass: FailureClass | null): string {
  if (failureClass === "infrastructure") return pc.yellow("infrastructure");
  return failureClass ?? "-";
}

function errorLine(error: unknown): string | undefined {
  if (!error || typeof error !== "object") return undefined;
  const e = error as { code?: string; message?: string };
  return `${e.code ? `[${e.code}] ` : ""}${(e.message ?? "").split("\n")[0]}`.slice(0, 160);
}
