import type { AssetGraph } from "../graph/index.js";
import type { RunPlan } from "./run-plan.js";
import { runShape, type RunShape } from "./run-settings.js";

/** How a run of a plan is created, besides the plan: where it comes from, its priority, tags and limits. */
export interface PlannedRunOptions<O extends string = string> {
  /** What asked for the run (manual, automation, backfill, rerun…). */
  readonly origin: O;
  /** Added to every step's asset priority (default 0). */
  readonly priority?: number | undefined;
  readonly tags?: Readonly<Record<string, string>> | undefined;
  /** At most this many steps of the run queued or running at once (default: no limit). */
  readonly maxActiveSteps?: number | null | undefined;
  /** Set by automation and backfills so two reconcilers never create the same run. */
  readonly idempotencyKey?: string | null | undefined;
  /** The backfill that creates the run. */
  readonly backfillId?: string | null | undefined;
}

/** A new run of a plan, as the run store creates it: the run's shape (steps, stored plan, snapshot version, job limits, step settings) and its options. */
export interface PlannedRun<O extends string = string> extends RunShape {
  readonly origin: O;
  readonly priority: number;
  readonly tags: Readonly<Record<string, string>>;
  readonly maxActiveSteps: number | null;
  readonly idempotencyKey: string | null;
  readonly backfillId: string | null;
}

/**
 * The new run that stores a plan: its snapshot version is the plan's, its job
 * and limits those of its assets (runShape).
 *
 * @example
 * import type { AssetGraph } from "../graph/index.js";
 * // given graph: AssetGraph, plan: RunPlan
 * const run = plannedRun(graph, plan, { origin: "manual", tags: { team: "sales" } }); // what RunStore.createRun takes
 */
export function plannedRun<O extends string>(graph: AssetGraph, plan: RunPlan, options: PlannedRunOptions<O>): PlannedRun<O> {
  return {
    ...runShape(graph, plan),
    origin: options.origin,
    priority: options.priority ?? 0,
    tags: options.tags ?? {},
    maxActiveSteps: options.maxActiveSteps ?? null,
    idempotencyKey: options.idempotencyKey ?? null,
    backfillId: options.backfillId ?? null,
  };
}
