import type { AutomationSpec } from "./automation.js";

/** The condition as the SDK call that builds it: `allOf(onCron("0 1 * * *"), not(hasFailed()))`. */
export function describeCondition(spec: AutomationSpec): string {
  switch (spec.kind) {
    case "cron":
      return `onCron(${JSON.stringify(spec.cron)}${spec.timezone ? `, { timezone: ${JSON.stringify(spec.timezone)} }` : ""})`;
    case "cron_tick":
      return `cronTickPassed(${JSON.stringify(spec.cron)}${spec.timezone ? `, { timezone: ${JSON.stringify(spec.timezone)} }` : ""})`;
    case "eager":
      return "eager()";
    case "missing":
      return "onMissing()";
    case "and":
      return `allOf(${spec.operands.map(describeCondition).join(", ")})`;
    case "or":
      return `anyOf(${spec.operands.map(describeCondition).join(", ")})`;
    case "not":
      return `not(${describeCondition(spec.operand)})`;
    case "is_missing":
      return "isMissing()";
    case "in_progress":
      return "isInProgress()";
    case "failed":
      return "hasFailed()";
    case "upstream_updated":
      return "upstreamUpdated()";
    case "upstreams_ready":
      return "upstreamsReady()";
    case "in_latest_window":
      return spec.count === 1 ? "inLatestWindow()" : `inLatestWindow(${spec.count})`;
    case "code_version_changed":
      return "codeVersionChanged()";
  }
}
