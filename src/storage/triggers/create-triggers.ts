import { sql } from "kysely";
import { InputError } from "../../errors/index.js";
import { notifyIn } from "../database-handle.js";
import { toJson } from "../json.js";
import { TRIGGERS_CHANNEL } from "../runs/channels.js";
import type { CreatedTrigger, NewTrigger } from "../trigger-store.js";
import { insertObservationTriggers, insertStepTriggers, waitingTriggersOf, type TriggerInput } from "./sql/insert-triggers.js";
import type { Trx } from "./trigger-rows.js";

/** The column default (migration 0007). */
const DEFAULT_POLL_INTERVAL_MS = 5000;

/** The rows to create, checked and with their defaults filled in; throws InputError (TRIGGER_INVALID) naming the first bad one. */
export function triggerInputs(rows: readonly NewTrigger[], now: Date): TriggerInput[] {
  rows.forEach(validate);
  return rows.map((r, i) => ({
    i,
    kind: r.kind,
    args: r.args ?? {},
    step_id: r.stepId ?? null,
    asset_key: r.stepId === undefined ? r.assetKey : null,
    partition_key: r.stepId === undefined ? (r.partitionKey ?? null) : null,
    next_check_at: (r.nextCheckAt ?? now).toISOString(),
    timeout_at: r.timeoutAt?.toISOString() ?? null,
    partition_window: r.partitionWindow ?? null,
    poll_interval_ms: r.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS,
    soft_fail: r.softFail ?? false,
  }));
}

/**
 * Creates the waiting triggers that do not exist yet and returns the waiting
 * trigger of every input row; a deferred step's trigger_id points at its
 * trigger, and triggerers are woken when any trigger is new.
 */
export async function createTriggersIn(trx: Trx, input: readonly TriggerInput[], now: Date): Promise<CreatedTrigger[]> {
  const steps = input.filter((r) => r.step_id !== null);
  const observations = input.filter((r) => r.step_id === null);
  const created = new Set<number>();
  if (steps.length > 0) (await insertStepTriggers(trx, steps, now)).forEach((id) => created.add(id));
  if (observations.length > 0) (await insertObservationTriggers(trx, observations, now)).forEach((id) => created.add(id));
  const idOf = await waitingTriggersOf(trx, input);
  // A deferred step shows what it waits for.
  const stepLinks = steps.map((s) => ({ step_id: s.step_id, trigger_id: idOf.get(s.i) ?? null }));
  if (stepLinks.length > 0) {
    await sql`
      update steps set trigger_id = x.trigger_id, updated_at = ${now}
      from jsonb_to_recordset(${toJson(stepLinks)}::jsonb) as x(step_id bigint, trigger_id bigint)
      where steps.id = x.step_id and steps.trigger_id is distinct from x.trigger_id`.execute(trx);
  }
  if (created.size > 0) await notifyIn(trx, TRIGGERS_CHANNEL, "");
  return input.map((r) => {
    const id = idOf.get(r.i);
    if (id === undefined) throw new Error(`trigger for input row ${r.i} vanished while it was created`);
    return { id, created: created.has(id) };
  });
}

function validate(row: NewTrigger, index: number): void {
  const where = `trigger #${index + 1} (kind "${row.kind}")`;
  if (typeof row.kind !== "string" || row.kind.length === 0) {
    throw new InputError(`${where}: kind must be a non-empty string naming a registered trigger kind`, { code: "TRIGGER_INVALID" });
  }
  const hasStep = row.stepId !== undefined;
  const hasAsset = row.assetKey !== undefined;
  if (hasStep === hasAsset) {
    throw new InputError(
      `${where}: give either stepId (a deferred step's wait) or assetKey (a source observation), not ${hasStep ? "both" : "neither"}`,
      { code: "TRIGGER_INVALID", location: hasAsset ? { assetKey: row.assetKey! } : {} },
    );
  }
  if (row.pollIntervalMs !== undefined && !(Number.isInteger(row.pollIntervalMs) && row.pollIntervalMs > 0)) {
    throw new InputError(`${where}: pollIntervalMs must be a whole number of milliseconds above 0, not ${row.pollIntervalMs}`, {
      code: "TRIGGER_INVALID",
      ...(hasAsset ? { location: { assetKey: row.assetKey!, field: "pollIntervalMs" } } : { location: { field: "pollIntervalMs" } }),
    });
  }
  if (row.timeoutAt && row.nextCheckAt && row.timeoutAt < row.nextCheckAt) {
    throw new InputError(`${where}: timeoutAt is before the first check (nextCheckAt); give a later timeout`, {
      code: "TRIGGER_INVALID",
      ...(hasAsset ? { location: { assetKey: row.assetKey! } } : {}),
    });
  }
}
