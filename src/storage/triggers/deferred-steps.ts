import { sql } from "kysely";
import type { SerializedError } from "../../errors/index.js";
import type { RunDecisions } from "../run-decisions.js";
import type { StepCompletion } from "../run-store.js";
import { completeStepsIn } from "../runs/complete.js";
import type { Ending, Trx } from "./trigger-rows.js";

/** A step still waiting on one of the triggers that end. */
export interface DeferredStep {
  id: number;
  tryNumber: number;
  assetKey: string;
  partitionKey: string;
}

/** Locks the steps of these triggers that are still deferred (steps after triggers: the lock order). */
export async function lockDeferredSteps(trx: Trx, triggers: readonly Ending[]): Promise<DeferredStep[]> {
  const stepIds = triggers.flatMap((t) => (t.stepId === null ? [] : [t.stepId])).sort((a, b) => a - b);
  if (stepIds.length === 0) return [];
  const { rows } = await sql<{ id: string; try_number: number; asset_key: string; partition_key: string }>`
    select id, try_number, asset_key, partition_key from steps
    where id = any(${stepIds}::bigint[]) and state = 'deferred' order by id for no key update`.execute(trx);
  return rows.map((r) => ({ id: Number(r.id), tryNumber: r.try_number, assetKey: r.asset_key, partitionKey: r.partition_key }));
}

/** A wait that timed out or cannot be checked (its trigger's arguments, its kind): the step's own doing, never retried. */
export type DeferredEnd =
  { outcome: "failed"; error: SerializedError; retryable: false; failureClass: "user" } | { outcome: "skipped"; reason: string };

/**
 * Ends the still-deferred steps of these triggers through the same completion
 * path as a worker's report: run counters, downstream propagation
 * (upstream_failed / skipped), failure alerts.
 */
export async function endDeferredSteps<T extends Ending>(
  trx: Trx,
  decisions: RunDecisions,
  triggers: readonly T[],
  now: Date,
  end: (step: DeferredStep, trigger: T) => DeferredEnd,
): Promise<void> {
  const byStep = new Map(triggers.flatMap((t) => (t.stepId === null ? [] : [[t.stepId, t] as const])));
  const completions: StepCompletion[] = (await lockDeferredSteps(trx, triggers)).map((step) => ({
    stepId: step.id,
    tryNumber: step.tryNumber,
    startedAt: null,
    endedAt: now,
    workerId: null,
    logRef: null,
    deferred: true,
    ...end(step, byStep.get(step.id)!),
  }));
  if (completions.length > 0) await completeStepsIn(trx, completions, now, decisions, Math.random);
}

export function describeStep(step: DeferredStep): string {
  return step.partitionKey ? `asset "${step.assetKey}" partition "${step.partitionKey}"` : `asset "${step.assetKey}"`;
}

export function stepLocation(step: DeferredStep): { assetKey: string; partitionKey?: string } {
  return { assetKey: step.assetKey, ...(step.partitionKey ? { partitionKey: step.partitionKey } : {}) };
}
