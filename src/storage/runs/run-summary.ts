import { InputError } from "../../errors/index.js";
import type { RunStatus } from "../database.js";
import type { RunSummary } from "../run-store.js";

/** Everything of a run but its plan, which can be large. */
export const SUMMARY_COLUMNS = [
  "id",
  "status",
  "origin",
  "snapshot_version",
  "job_name",
  "priority",
  "tags",
  "steps_total",
  "steps_done",
  "steps_failed",
  "steps_active",
  "created_at",
  "started_at",
  "ended_at",
  "cancel_requested_at",
  "backfill_id",
  "plan_version",
] as const;

export function toRunSummary(r: {
  id: string;
  status: RunStatus;
  origin: RunSummary["origin"];
  snapshot_version: number;
  job_name: string | null;
  priority: number;
  tags: Record<string, unknown>;
  steps_total: number;
  steps_done: number;
  steps_failed: number;
  steps_active: number;
  created_at: Date;
  started_at: Date | null;
  ended_at: Date | null;
  cancel_requested_at: Date | null;
  backfill_id: string | null;
  plan_version: number;
}): RunSummary {
  return {
    id: r.id,
    status: r.status,
    origin: r.origin,
    snapshotVersion: r.snapshot_version,
    jobName: r.job_name,
    priority: r.priority,
    tags: r.tags,
    stepsTotal: r.steps_total,
    stepsDone: r.steps_done,
    stepsFailed: r.steps_failed,
    stepsActive: r.steps_active,
    createdAt: r.created_at,
    startedAt: r.started_at,
    endedAt: r.ended_at,
    cancelRequestedAt: r.cancel_requested_at,
    backfillId: r.backfill_id,
    planVersion: r.plan_version,
  };
}

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export function isUuid(s: string): boolean {
  return UUID_RE.test(s);
}

export function runNotFound(runId: string): InputError {
  return new InputError(
    `no run has the id "${runId}"; list runs with \`tributary runs\` (a run past the history retention is archived: \`tributary archive list\`)`,
    { code: "RUN_NOT_FOUND" },
  );
}
