// How triggers read for people: `fileExists(/in/2025-03-01.csv)`, "checked 3×, next in 4 s".
import type { TriggerView } from "../storage/index.js";
import { renderTemplate } from "../trigger-checks/templates/index.js";

const MAX_CALL_LENGTH = 80;

/**
 * The trigger as a call with its string and number arguments, templates
 * rendered for its partition where they can be (a template that cannot be
 * rendered is shown as written): `fileExists(/in/2025-03-01.csv)`, or with
 * several arguments `s3ObjectExists(bucket=landing, key=in/2025-03-01.csv)`
 * (named, because stored arguments keep no order).
 */
export function triggerCall(trigger: TriggerView): string {
  const partition =
    trigger.partitionKey === null
      ? undefined
      : { key: trigger.partitionKey, ...(trigger.partitionWindow ? { window: trigger.partitionWindow } : {}) };
  const args = Object.entries(trigger.args)
    .filter((e): e is [string, string | number] => typeof e[1] === "string" || typeof e[1] === "number")
    .map(([name, v]) => [name, typeof v === "string" ? rendered(v, partition) : String(v)] as const);
  const shown = args.length === 1 ? args[0]![1] : args.map(([name, v]) => `${name}=${v}`).join(", ");
  return clip(`${trigger.kind}(${shown})`, MAX_CALL_LENGTH);
}

function rendered(template: string, partition: Parameters<typeof renderTemplate>[1]): string {
  try {
    return renderTemplate(template, partition);
  } catch {
    return template;
  }
}

/** A deferred step's wait: `waiting on fileExists(/in/x.csv), checked 3×, next in 4 s, times out 2025-03-02T00:00:00.000Z`. */
export function describeWait(trigger: TriggerView, now: Date): string {
  const parts = [`${trigger.status === "waiting" ? "waiting on" : `${trigger.status.replace("_", " ")}:`} ${triggerCall(trigger)}`];
  parts.push(trigger.attempts === 0 ? "not checked yet" : `checked ${trigger.attempts}×`);
  if (trigger.nextCheckAt) parts.push(`next ${inTime(trigger.nextCheckAt, now)}`);
  if (trigger.status === "waiting") parts.push(trigger.timeoutAt ? `times out ${trigger.timeoutAt.toISOString()}` : "no timeout");
  return parts.join(", ");
}

/** "in 4 s", "in 3 min", "in 2 h", "in 5 d"; "due now" when it has passed. */
export function inTime(at: Date, now: Date): string {
  const ms = at.getTime() - now.getTime();
  if (ms <= 0) return "due now";
  const s = Math.ceil(ms / 1000);
  if (s < 120) return `in ${s} s`;
  if (s < 120 * 60) return `in ${Math.round(s / 60)} min`;
  if (s < 48 * 3600) return `in ${Math.round(s / 3600)} h`;
  return `in ${Math.round(s / 86_400)} d`;
}

/** What the last check saw, on one short line: its detail, its error, or its JSON. */
export function lastResultLine(trigger: TriggerView): string {
  const r = trigger.lastResult;
  if (r === null) return "";
  const record = typeof r === "object" && !Array.isArray(r) ? r : undefined;
  const text =
    typeof r === "string"
      ? r
      : typeof record?.detail === "string"
        ? record.detail
        : typeof record?.error === "string"
          ? `error: ${record.error}`
          : JSON.stringify(r);
  return clip(text, 60);
}

/** Whom the trigger is for: the source partition it observes, or the deferred step (its asset and partition). */
export function triggerFor(trigger: TriggerView): string {
  const target = trigger.assetKey === null ? "" : trigger.partitionKey ? `${trigger.assetKey} ${trigger.partitionKey}` : trigger.assetKey;
  return trigger.stepId === null ? target : `step ${trigger.stepId}${target ? ` (${target})` : ""}`;
}

function clip(text: string, max: number): string {
  const line = text.split("\n")[0]!;
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
