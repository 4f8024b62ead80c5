import { sql, type SelectType } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database, PgliteHandle } from "../../src/storage/index.js";
import { openTestPglite } from "../support/pglite.js";

type Nullability<T> = { [C in keyof T]-?: null extends SelectType<T[C]> ? "null" : "not null" };

/**
 * Every column of every table with its nullability. The type makes this list
 * match the Kysely `Database` interface exactly (a missing, extra or wrongly
 * nullable column is a compile error); the test makes it match the migrated
 * schema. Together: src/storage/database.ts cannot drift from migrations/.
 */
const columns: { [T in keyof Database]: Nullability<Database[T]> } = {
  alerts: {
    id: "not null", cause_key: "not null", kind: "not null", asset_key: "null", partition_key: "null",
    run_id: "null", owner: "null", payload: "not null", status: "not null", attempts: "not null",
    next_attempt_at: "not null", last_error: "null", sent_at: "null", created_at: "not null",
    sent_to: "not null",
  },
  assets: {
    key: "not null", file: "not null", spec: "not null", group_name: "null", owner: "null",
    is_source: "not null", partitions_hash: "null", first_seen_version: "not null",
    last_seen_version: "not null", removed_at: "null", paused: "not null", paused_at: "null",
    created_at: "not null", updated_at: "not null",
  },
  automation_evaluations: {
    id: "not null", asset_key: "not null", partition_subset: "not null", decision: "not null",
    condition: "not null", reasons: "not null", run_id: "null", snapshot_version: "null",
    evaluated_at: "not null", tick: "not null",
  },
  automation_state: { asset_key: "not null", state: "not null", updated_at: "not null" },
  backfills: {
    id: "not null", status: "not null", selection: "not null", partitions: "not null",
    max_concurrent_runs: "not null", max_partitions_per_run: "not null", priority: "not null",
    requested_count: "not null", done_count: "not null", failed_count: "not null",
    in_progress_count: "not null", cursor: "null", tags: "not null", error: "null", created_at: "not null",
    updated_at: "not null", canceled_at: "null", completed_at: "null",
  },
  check_results: {
    id: "not null", asset_key: "not null", check_name: "not null", partition_key: "not null", run_id: "null",
    step_id: "null", event_id: "null", passed: "not null", severity: "not null", blocking: "not null",
    metadata: "not null", created_at: "not null", try_number: "null", error: "null",
  },
  component_heartbeats: {
    id: "not null", kind: "not null", hostname: "not null", pid: "not null", started_at: "not null",
    heartbeat_at: "not null", info: "not null",
  },
  cursors: { name: "not null", value: "not null", updated_at: "not null" },
  definition_files: {
    path: "not null", source_hash: "not null", status: "not null", error: "null", warnings: "not null",
    problems: "not null", assets: "not null", checks: "not null", load_ms: "not null", loaded_at: "not null",
    last_success_at: "null",
  },
  definition_snapshots: {
    version: "not null", content_hash: "not null", graph: "not null", created_at: "not null",
  },
  dynamic_partitions: {
    name: "not null", partition_key: "not null", position: "not null", added_at: "not null",
  },
  event_inputs: {
    event_id: "not null", upstream_asset_key: "not null", upstream_partition_key: "not null",
    upstream_event_id: "null",
  },
  events: {
    id: "not null", tx_id: "not null", kind: "not null", asset_key: "not null", partition_key: "not null",
    run_id: "null", step_id: "null", try_number: "null", data_version: "null", code_version: "null",
    metadata: "not null", created_at: "not null",
  },
  outputs: {
    id: "not null", asset_key: "not null", partition_key: "not null", run_id: "not null", step_id: "not null",
    map_index: "not null", try_number: "not null", size_bytes: "not null", inline_value: "null",
    storage_ref: "null", content_type: "not null", created_at: "not null", data_version: "null",
  },
  partition_status: {
    asset_key: "not null", partition_key: "not null", status: "not null",
    last_materialization_event_id: "null", last_run_id: "null", last_step_id: "null", data_version: "null",
    code_version: "null", materialized_at: "null", updated_at: "not null", failed_check: "null",
  },
  pools: {
    name: "not null", slots: "not null", description: "not null", include_deferred: "not null",
    created_at: "not null", updated_at: "not null", occupied_slots: "not null",
  },
  runs: {
    id: "not null", status: "not null", origin: "not null", backfill_id: "null", parent_run_id: "null",
    idempotency_key: "null", snapshot_version: "not null", plan: "not null", job_name: "null",
    logical_date: "null", data_interval_start: "null", data_interval_end: "null", priority: "not null",
    tags: "not null", max_active_steps: "null", cancel_requested_at: "null", created_at: "not null",
    started_at: "null", ended_at: "null", updated_at: "not null", error: "null",
    steps_total: "not null", steps_done: "not null", steps_failed: "not null", steps_active: "not null",
    max_active_runs: "null", plan_version: "not null",
  },
  schema_migrations: {
    version: "not null", name: "not null", checksum: "not null", applied_at: "not null",
    duration_ms: "not null",
  },
  step_deps: { step_id: "not null", upstream_step_id: "not null" },
  step_tries: {
    id: "not null", step_id: "not null", run_id: "not null", try_number: "not null", state: "not null",
    executor: "null", worker_id: "null", hostname: "null", pid: "null", queued_at: "null", started_at: "null",
    ended_at: "null", heartbeat_at: "null", duration_ms: "null", error: "null", log_ref: "null",
    token_hash: "null", created_at: "not null", token_expires_at: "null",
  },
  steps: {
    id: "not null", run_id: "not null", asset_key: "not null", partition_key: "not null",
    map_index: "not null", state: "not null", trigger_rule: "not null", try_number: "not null",
    max_tries: "not null", priority: "not null", pool: "not null", pool_slots: "not null",
    executor: "not null", queue: "null", timeout_ms: "null", retry_policy: "null", next_retry_at: "null",
    scheduled_at: "null", queued_at: "null", started_at: "null", ended_at: "null", heartbeat_at: "null",
    worker_id: "null", trigger_id: "null", skip_reason: "null", error: "null", created_at: "not null",
    updated_at: "not null", upstream_total: "not null",
    tries_before: "not null", max_concurrency: "null", depth: "not null", wait_started_at: "null",
    check_name: "null", map_item: "null", map_label: "null", map_count: "null", map_open: "null", map_inputs: "null",
  },
  triggers: {
    id: "not null", kind: "not null", args: "not null", step_id: "null", asset_key: "null",
    partition_key: "null", status: "not null", next_check_at: "not null", timeout_at: "null",
    lease_owner: "null", lease_expires_at: "null", attempts: "not null", last_checked_at: "null",
    last_result: "null", payload: "null", error: "null", created_at: "not null", updated_at: "not null",
    ended_at: "null", partition_window: "null", poll_interval_ms: "not null", soft_fail: "not null",
    try_number: "null",
  },
};

describe("the Database interface", () => {
  let handle: PgliteHandle;
  beforeAll(async () => {
    handle = await openTestPglite();
  });
  afterAll(async () => {
    await handle.close();
  });

  it("declares exactly the migrated tables and columns, with their nullability", async () => {
    const { rows } = await sql<{ table_name: string; column_name: string; is_nullable: string }>`
      select table_name, column_name, is_nullable from information_schema.columns
      where table_schema = 'public' order by table_name, column_name`.execute(handle.db);
    const actual: Record<string, Record<string, string>> = {};
    for (const row of rows) {
      (actual[row.table_name] ??= {})[row.column_name] = row.is_nullable === "YES" ? "null" : "not null";
    }
    expect(actual).toEqual(columns);
  });
});
