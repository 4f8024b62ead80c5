import type { Context } from "hono";
import type { InstantRange, RunStatus, StepState } from "../../storage/index.js";
import { parseOr400, RestError } from "./rest-error.js";
import { instant } from "./rest-params.js";

// Airflow's list filters (`…_gte`/`…_lte` dates, durations, repeatable `state`, `pool`, …), parsed and mapped to
// Tributary's states. Every value is checked; a bad one is a 400 naming the parameter.

/** Airflow DagState → the run statuses it stands for (Airflow has no canceled: it shows as failed). */
const DAG_STATES: Record<string, readonly RunStatus[]> = {
  queued: ["queued"],
  running: ["running"],
  success: ["success"],
  failed: ["failed", "canceled"],
};

/**
 * Airflow TaskState → step states. `none` (no state yet) is a step waiting on
 * its upstreams (`pending`); Airflow's `restarting` has no Tributary
 * counterpart and matches nothing.
 */
const TASK_STATES: Record<string, readonly StepState[]> = {
  none: ["pending"],
  scheduled: ["scheduled"],
  queued: ["queued"],
  running: ["running"],
  success: ["success"],
  failed: ["failed"],
  skipped: ["skipped"],
  up_for_retry: ["up_for_retry"],
  up_for_reschedule: ["up_for_reschedule"],
  deferred: ["deferred"],
  upstream_failed: ["upstream_failed"],
  removed: ["removed"],
  restarting: [],
};

/** `<name>_gte` and `<name>_lte` as an instant range; undefined when neither is given. */
export function dateRange(c: Context, name: string): InstantRange | undefined {
  const at = (suffix: string): Date | undefined => {
    const v = c.req.query(`${name}_${suffix}`);
    return v === undefined ? undefined : parseOr400(instant, v, `query.${name}_${suffix}`);
  };
  const range = { gte: at("gte"), lte: at("lte") };
  if (range.gte === undefined && range.lte === undefined) return undefined;
  if (range.gte && range.lte && range.gte > range.lte) {
    throw RestError.badRequest(`query.${name}_gte: ${range.gte.toISOString()} is after ${name}_lte ${range.lte.toISOString()}`);
  }
  return range;
}

/** `duration_gte` / `duration_lte` in seconds (Airflow's float duration). */
export function durationRange(c: Context): { gte?: number | undefined; lte?: number | undefined } | undefined {
  const at = (suffix: string): number | undefined => {
    const v = c.req.query(`duration_${suffix}`);
    if (v === undefined) return undefined;
    if (!/^\d{1,12}(\.\d{1,9})?$/.test(v))
      throw RestError.badRequest(`query.duration_${suffix}: ${JSON.stringify(v)} must be a number of seconds, e.g. 1.5`);
    return Number(v);
  };
  const range = { gte: at("gte"), lte: at("lte") };
  return range.gte === undefined && range.lte === undefined ? undefined : range;
}

/** A repeatable parameter's values (`pool=a&pool=b`); undefined when absent. An empty value is a 400. */
export function repeated(c: Context, name: string): string[] | undefined {
  const values = c.req.queries(name);
  if (values === undefined) return undefined;
  if (values.some((v) => v === "")) throw RestError.badRequest(`query.${name}: an empty value; give ${name}=<value>, repeated for several`);
  return values;
}

/** The run statuses the repeatable `state` names (Airflow DagState values). */
export function runStatesOf(c: Context): RunStatus[] | undefined {
  return statesOf(c, DAG_STATES);
}

/** The step states the repeatable `state` names (Airflow TaskState values). */
export function taskStatesOf(c: Context): StepState[] | undefined {
  return statesOf(c, TASK_STATES);
}

function statesOf<S extends string>(c: Context, table: Record<string, readonly S[]>): S[] | undefined {
  const given = repeated(c, "state");
  if (given === undefined) return undefined;
  const unknown = given.filter((s) => !Object.hasOwn(table, s));
  if (unknown.length > 0) {
    throw RestError.badRequest(
      `query.state: ${unknown.map((s) => JSON.stringify(s)).join(", ")} is not a state; use ${Object.keys(table).join(", ")}`,
    );
  }
  return [...new Set(given.flatMap((s) => table[s]!))];
}

/**
 * Airflow's `fields` (ReturnFields): which fields of each document to return,
 * repeated (`fields=dag_id&fields=is_paused`) or comma-separated. Undefined
 * when absent; an unknown field is a 400 naming it and the known ones.
 */
export function fieldsOf(c: Context, known: readonly string[]): string[] | undefined {
  const given = c.req.queries("fields");
  if (given === undefined) return undefined;
  const fields = [...new Set(given.flatMap((v) => v.split(",")).map((f) => f.trim()))];
  const unknown = fields.filter((f) => !known.includes(f));
  if (fields.length === 0 || unknown.length > 0) {
    throw RestError.badRequest(
      `query.fields: ${unknown.length > 0 ? `unknown field(s) ${unknown.map((f) => JSON.stringify(f)).join(", ")}` : "no field named"}; the fields are ${known.join(", ")}`,
    );
  }
  return fields;
}

/** The document with only `fields` (all of it when undefined). */
export function pickFields(doc: Record<string, unknown>, fields: readonly string[] | undefined): Record<string, unknown> {
  return fields === undefined ? doc : Object.fromEntries(fields.filter((f) => f in doc).map((f) => [f, doc[f]]));
}

/** Whether `value` lies in the range; a missing value (a step that never started) lies in none. */
export function inRange<T extends Date | number>(
  value: T | null,
  range: { gte?: T | undefined; lte?: T | undefined } | undefined,
): boolean {
  if (range === undefined) return true;
  if (value === null) return false;
  return (range.gte === undefined || value >= range.gte) && (range.lte === undefined || value <= range.lte);
}
