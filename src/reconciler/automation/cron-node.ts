import { UNPARTITIONED, type PartitionSpace, type PartitionSubset } from "../../partitions/index.js";
import type { AutomationSpec } from "../../sdk/index.js";
import { fromKeyRanges, type AssetAutomationState } from "./automation-state.js";
import { cronTicks, latestTick, nextTick } from "./cron-ticks.js";
import { latestDue } from "./latest-due.js";

// The cron conditions of an asset's automation: which partitions their ticks made due since the last evaluation.

export interface CronNode {
  readonly path: string;
  readonly cron: string;
  readonly timezone: string | null;
  /** Partitions made due by ticks (new and owed), existing ones only. */
  readonly due: PartitionSubset;
  /** The latest tick that passed in this evaluation, if any. */
  readonly tick: Date | undefined;
  readonly next: Date | undefined;
  readonly problem: string | undefined;
}

export function cronNode(
  path: string,
  cron: string,
  timezone: string | null,
  space: PartitionSpace | null,
  existing: PartitionSubset,
  catchup: boolean,
  previous: AssetAutomationState | undefined,
  lastEvaluatedAt: Date | undefined,
  gap: boolean,
  now: Date,
): CronNode {
  let ticks: readonly Date[] = [];
  let problem: string | undefined;
  const knownNext = previous?.nextCron?.[path];
  if (lastEvaluatedAt && !gap && knownNext && now < new Date(knownNext) && now >= lastEvaluatedAt) {
    // The next tick is known and not reached: no cron arithmetic at all (the common case).
    const due = fromKeyRanges(space, previous?.owed[path]).intersection(existing);
    return { path, cron, timezone, due, tick: undefined, next: new Date(knownNext), problem: undefined };
  }
  if (!lastEvaluatedAt || (gap && !catchup) || (catchup && !previous)) {
    if (catchup && !previous && space) {
      // First evaluation with catchup: every tick since the partitions began.
      const start = space.windowAt(0)?.start;
      if (start) ({ ticks, problem } = cronTicks(cron, timezone, new Date(start.getTime() - 1), now));
    }
    if (ticks.length === 0 && !problem) {
      // Without catchup (or after a gap): the latest tick only, if it is after
      // the last evaluation (a tick already handled is not handled twice).
      const latest = latestTick(cron, timezone, now);
      problem = latest.problem;
      if (latest.latest && (!lastEvaluatedAt || latest.latest > lastEvaluatedAt)) ticks = [latest.latest];
    }
  } else {
    ({ ticks, problem } = cronTicks(cron, timezone, lastEvaluatedAt, now));
  }
  let due = fromKeyRanges(space, previous?.owed[path]);
  for (const t of ticks) due = due.union(space ? latestDue(space, t) : UNPARTITIONED);
  const next = nextTick(cron, timezone, now);
  return { path, cron, timezone, due: due.intersection(existing), tick: ticks.at(-1), next, problem };
}

export function collectCrons(node: AutomationSpec, path: string, f: (path: string, cron: string, timezone: string | null) => void): void {
  if (node.kind === "cron" || node.kind === "cron_tick") f(path, node.cron, node.timezone);
  else if (node.kind === "and" || node.kind === "or") node.operands.forEach((o, i) => collectCrons(o, `${path}.operands[${i}]`, f));
  else if (node.kind === "not") collectCrons(node.operand, `${path}.operand`, f);
}

export function collectKinds(node: AutomationSpec, out: Set<string>): void {
  out.add(node.kind);
  if (node.kind === "and" || node.kind === "or") for (const o of node.operands) collectKinds(o, out);
  else if (node.kind === "not") collectKinds(node.operand, out);
}
