import type { AlertRecord } from "../../storage/index.js";

/**
 * Somewhere alerts go. `send` resolves once the sink accepted the alert and
 * throws (or rejects) when it did not; the delivery loop retries it later.
 */
export interface AlertSink {
  /** The name routes use (the key in the config's `sinks`). */
  readonly name: string;
  /** Longest a send may take (the delivery lease is derived from it). */
  readonly timeoutMs: number;
  send(alert: AlertRecord): Promise<void>;
}

/** The structured part of an alert, as webhooks receive it next to `text`. */
export interface AlertFields {
  readonly id: number;
  readonly kind: string;
  readonly causeKey: string;
  readonly assetKey: string | null;
  readonly partitionKey: string | null;
  readonly runId: string | null;
  readonly owner: string | null;
  readonly createdAt: string;
  readonly details: AlertRecord["payload"];
}

export function alertFields(alert: AlertRecord): AlertFields {
  return {
    id: alert.id,
    kind: alert.kind,
    causeKey: alert.causeKey,
    assetKey: alert.assetKey,
    partitionKey: alert.partitionKey,
    runId: alert.runId,
    owner: alert.owner,
    createdAt: alert.createdAt.toISOString(),
    details: alert.payload,
  };
}

/** One human sentence (Slack's `text`): what happened, where, and who owns it. */
export function alertText(alert: AlertRecord): string {
  const p = alert.payload;
  const where = `asset ${alert.assetKey ?? "?"}${alert.partitionKey ? ` partition ${alert.partitionKey}` : ""}`;
  const owner = alert.owner ? ` (owner ${alert.owner})` : "";
  const errorMessage = (e: unknown): string =>
    e && typeof e === "object" && typeof (e as { message?: unknown }).message === "string"
      ? (e as { message: string }).message
      : "unknown error";
  switch (alert.kind) {
    case "step_failed":
      return `[tributary] Step failed for good: ${where}${owner}, run ${alert.runId ?? "?"}, try ${String(p["try"] ?? "?")}: ${errorMessage(p["error"])}`;
    case "check_failed": {
      const check = `${p["blocking"] === true ? "blocking" : "non-blocking"} check ${String(p["check"] ?? "?")}`;
      const why = p["error"] ? `: ${errorMessage(p["error"])}` : "";
      const effect = p["blocking"] === true ? "; its readers do not run on this partition" : "";
      return `[tributary] Check failed: ${check} (${String(p["severity"] ?? "error")}) on ${where}${owner}, run ${alert.runId ?? "?"}${why}${effect}`;
    }
    case "deadline_missed":
      return (
        `[tributary] Deadline missed: ${where}${owner} is not materialised ${formatDeadline(Number(p["deadlineMs"]))} ` +
        `after its window closed (${String(p["windowEnd"] ?? "?")}; deadline ${String(p["deadlineAt"] ?? "?")})`
      );
    case "observation_timed_out":
      return (
        `[tributary] Source not observed in time: ${where}${owner} did not appear by ${String(p["timeoutAt"] ?? "?")} ` +
        `(${String(p["kind"] ?? "trigger")} ${JSON.stringify(p["args"] ?? {})}); readers of it do not run on missing data`
      );
    case "load_error": {
      const owners = Array.isArray(p["owners"]) && p["owners"].length > 0 ? ` (owners ${p["owners"].join(", ")})` : "";
      return (
        `[tributary] Definitions file ${String(p["file"] ?? "?")} stopped loading${owners}: ${errorMessage(p["error"])}. ` +
        `Its last good definitions keep scheduling until it is fixed`
      );
    }
    default:
      return `[tributary] ${alert.kind}: ${where}${owner}`;
  }
}

function formatDeadline(ms: number): string {
  if (!Number.isFinite(ms)) return "by its deadline";
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${ms / 1000} s`;
}
