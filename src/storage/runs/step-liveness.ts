import { sql, type Kysely } from "kysely";
import type { Database } from "../database.js";
import { toJson } from "../json.js";
import type { StepStart } from "../run-store.js";

export async function markStarted(db: Kysely<Database>, starts: readonly StepStart[], now: Date): Promise<void> {
  if (starts.length === 0) return;
  const input = toJson(
    starts.map((s) => ({
      step_id: s.stepId,
      try_number: s.tryNumber,
      worker_id: s.workerId,
      hostname: s.hostname,
      pid: s.pid,
      started_at: s.startedAt.toISOString(),
    })),
  );
  await sql`
    with x as (
      select * from jsonb_to_recordset(${input}::jsonb)
        as x(step_id bigint, try_number int, worker_id text, hostname text, pid int, started_at timestamptz)
    ), s as (
      update steps set state = 'running', started_at = x.started_at, heartbeat_at = ${now}, worker_id = x.worker_id,
                       updated_at = ${now}
      from x where steps.id = x.step_id and steps.try_number = x.try_number and steps.state = 'queued'
      returning steps.id
    )
    update step_tries t set state = 'running', started_at = x.started_at, heartbeat_at = ${now},
                            worker_id = x.worker_id, hostname = x.hostname, pid = x.pid
    from x where t.step_id = x.step_id and t.try_number = x.try_number and t.state = 'queued'`.execute(db);
}

export async function heartbeat(db: Kysely<Database>, steps: readonly { stepId: number; tryNumber: number }[], now: Date): Promise<void> {
  if (steps.length === 0) return;
  const input = toJson(steps.map((s) => ({ step_id: s.stepId, try_number: s.tryNumber })));
  await sql`
    update steps set heartbeat_at = ${now}
    from jsonb_to_recordset(${input}::jsonb) as x(step_id bigint, try_number int)
    where steps.id = x.step_id and steps.try_number = x.try_number and steps.state = 'running'`.execute(db);
}
