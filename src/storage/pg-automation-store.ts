import { sql, type Kysely } from "kysely";
import type {
  AutomationLease,
  AutomationStore,
  EvaluationRow,
  EventCursor,
  EventPage,
  ListEvaluationsOptions,
  PartitionRef,
  PartitionStates,
  PartitionSummary,
  StalePartition,
  StreamEvent,
  TickCommit,
} from "./automation-store.js";
import { releaseCursorLease, takeCursorLease } from "./cursor-lease.js";
import type { Database } from "./database.js";
import { parseEventCursor, readEventStream, STREAM_START, type PendingTransaction } from "./event-stream.js";
import { toJson } from "./json.js";
import { withPlannerSettings } from "./planner-settings.js";

const CURSOR = "automation";
/** Partition summaries written per statement (see commitTick). */
const SUMMARIES_PER_STATEMENT = 200;

interface CursorValue {
  tick: number;
  txId: string;
  id: number;
  /** Absent in cursors written before the stream kept pending transactions. */
  pending?: readonly PendingTransaction[];
  owner?: string | null;
  until?: string | null;
}

const ACTIVE_STEP_STATES = ["pending", "scheduled", "queued", "running", "up_for_retry", "up_for_reschedule", "deferred"] as const;

/** AutomationStore in Postgres SQL (server Postgres and PGlite). */
export class PgAutomationStore implements AutomationStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async acquireLease(owner: string, now: Date, ttlMs: number): Promise<AutomationLease> {
    const initial: CursorValue = { tick: 1, ...STREAM_START };
    // SKIP LOCKED: while another reconciler commits a tick, this one simply skips automation for this pass.
    const row = await takeCursorLease<CursorValue>(this.#db, CURSOR, initial, owner, now, ttlMs);
    if (!row) return { acquired: false, tick: 0, cursor: STREAM_START, continued: false };
    const continued = row.previousOwner === owner && row.previousUntil !== null && new Date(row.previousUntil) >= now;
    return { acquired: true, tick: Number(row.value.tick), cursor: parseEventCursor(row.value), continued };
  }

  async releaseLease(owner: string): Promise<void> {
    await releaseCursorLease(this.#db, CURSOR, owner);
  }

  async readEvents(after: EventCursor, limit: number): Promise<EventPage> {
    const page = await readEventStream(this.#db, {
      after,
      limit,
      select: async (trx, ids) =>
        (
          await sql<{
            id: string;
            tx_id: string;
            kind: string;
            asset_key: string;
            partition_key: string;
            run_id: string | null;
            check_passed: boolean | null;
          }>`
            select id, tx_id::text as tx_id, kind, asset_key, partition_key, run_id,
                   case when kind = 'check_result' then (metadata->>'passed')::boolean end as check_passed
            from events
            where id in (${ids})`.execute(trx)
        ).rows,
    });
    const events = page.entries.map(({ row: r }): StreamEvent => ({
      id: Number(r.id),
      txId: r.tx_id,
      kind: r.kind,
      assetKey: r.asset_key,
      partitionKey: r.partition_key,
      runId: r.run_id,
      ...(r.check_passed === null ? {} : { checkPassed: r.check_passed }),
    }));
    return { events, cursor: page.end };
  }

  async partitionStates(assetKeys?: readonly string[]): Promise<PartitionStates> {
    let q = this.#db
      .selectFrom("partition_status")
      .select(["asset_key", "partition_key", "status", "last_materialization_event_id", "failed_check"])
      .where((eb) => eb.or([eb("last_materialization_event_id", "is not", null), eb("status", "=", "failed")]));
    if (assetKeys) {
      if (assetKeys.length === 0) return { materialized: new Map(), failed: new Map() };
      // One array parameter however many assets.
      q = q.where(sql<boolean>`asset_key = any(${[...assetKeys]}::text[])`);
    }
    const rows = await q.execute();
    const materialized = new Map<string, string[]>();
    const failed = new Map<string, string[]>();
    for (const r of rows) {
      // Data that failed a blocking check is not data automation builds on: its readers wait as if it were missing.
      if (r.last_materialization_event_id !== null && r.failed_check === null) push(materialized, r.asset_key, r.partition_key);
      if (r.status === "failed") push(failed, r.asset_key, r.partition_key);
    }
    return { materialized, failed };
  }

  async inProgress(): Promise<Map<string, string[]>> {
    const rows = await this.#db
      .selectFrom("runs as r")
      .innerJoin("steps as s", "s.run_id", "r.id")
      .select(["s.asset_key", "s.partition_key"])
      .distinct()
      .where("r.status", "in", ["queued", "running"])
      .where("s.state", "in", [...ACTIVE_STEP_STATES])
      .execute();
    const out = new Map<string, string[]>();
    for (const r of rows) push(out, r.asset_key, r.partition_key);
    return out;
  }

  async staleByUpstream(partitions: readonly PartitionRef[]): Promise<StalePartition[]> {
    if (partitions.length === 0) return [];
    const input = partitions.map((p) => ({ asset_key: p.assetKey, partition_key: p.partitionKey }));
    const { rows } = await sql<{
      asset_key: string;
      partition_key: string;
      upstream: string | null;
      upstream_partition: string | null;
      event_id: string | null;
    }>`
      with x as (
        select * from jsonb_to_recordset(${toJson(input)}::jsonb) as x(asset_key text, partition_key text)
      )
      select distinct on (x.asset_key, x.partition_key)
             x.asset_key, x.partition_key, ei.upstream_asset_key as upstream, ei.upstream_partition_key as upstream_partition,
             ups.last_materialization_event_id as event_id
      from x
      left join partition_status ps on ps.asset_key = x.asset_key and ps.partition_key = x.partition_key
      left join event_inputs ei on ei.event_id = ps.last_materialization_event_id
      left join partition_status ups on ups.asset_key = ei.upstream_asset_key and ups.partition_key = ei.upstream_partition_key
      where ps.last_materialization_event_id is null
         or (ups.last_materialization_event_id is not null
             and ups.last_materialization_event_id is distinct from ei.upstream_event_id)
         -- Written without lineage (reported by an outside producer): what it read is unknown,
         -- so an upstream update after it counts.
         or ei.event_id is null
      order by x.asset_key, x.partition_key, ups.last_materialization_event_id desc nulls last`.execute(this.#db);
    return rows.map((r) => ({
      assetKey: r.asset_key,
      partitionKey: r.partition_key,
      upstream: r.upstream,
      upstreamPartition: r.upstream_partition,
      eventId: r.event_id === null ? null : Number(r.event_id),
    }));
  }

  async codeVersionChanged(assets: readonly { assetKey: string; codeVersion: string }[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    if (assets.length === 0) return out;
    const input = assets.map((a) => ({ asset_key: a.assetKey, code_version: a.codeVersion }));
    // Per asset, two ranges of partition_status_code_version_idx: what is read is what differs, not every recorded
    // partition. The planner cannot know that few differ (it takes a third for an inequality), and would read the
    // table whole: the subquery is kept apart (offset 0) so that each asset is looked up by index, and JIT is off
    // since the estimate it would be compiled for is that of the whole table.
    const { rows } = await withPlannerSettings(this.#db, { jit: "off" }, (trx) =>
      sql<{ asset_key: string; partition_key: string }>`
        with x as (select * from jsonb_to_recordset(${toJson(input)}::jsonb) as x(asset_key text, code_version text))
        select x.asset_key, ps.partition_key
        from x cross join lateral (
          select ps.partition_key from partition_status ps
          where ps.asset_key = x.asset_key and (ps.code_version < x.code_version or ps.code_version > x.code_version)
            and ps.last_materialization_event_id is not null
          offset 0
        ) ps`.execute(trx),
    );
    for (const r of rows) push(out, r.asset_key, r.partition_key);
    return out;
  }

  async pausedAssets(): Promise<Set<string>> {
    const rows = await this.#db.selectFrom("assets").select("key").where("paused", "=", true).where("removed_at", "is", null).execute();
    return new Set(rows.map((r) => r.key));
  }

  async loadSummaries(): Promise<Map<string, PartitionSummary>> {
    const rows = await this.#db.selectFrom("automation_partitions").select(["asset_key", "partitions", "materialized", "failed"]).execute();
    const out = new Map<string, PartitionSummary>();
    for (const r of rows) {
      const materialized = keyRanges(r.materialized);
      const failed = keyRanges(r.failed);
      // A row this code cannot read is as good as none: the asset's partitions are read from partition_status.
      if (materialized && failed) out.set(r.asset_key, { partitions: r.partitions, materialized, failed });
    }
    return out;
  }

  async loadStates(): Promise<Map<string, unknown>> {
    const rows = await this.#db.selectFrom("automation_state").select(["asset_key", "state"]).execute();
    return new Map(rows.map((r) => [r.asset_key, r.state as unknown]));
  }

  async commitTick(owner: string, commit: TickCommit, now: Date): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ value: CursorValue }>`select value from cursors where name = ${CURSOR} for no key update`.execute(trx);
      const value = rows[0]?.value;
      if (!value || value.owner !== owner || Number(value.tick) !== commit.tick) return false;
      if (commit.states.size > 0) {
        const states = [...commit.states].map(([asset_key, state]) => ({ asset_key, state }));
        await sql`
          insert into automation_state (asset_key, state, updated_at)
          select x.asset_key, x.state, ${now}
          from jsonb_to_recordset(${toJson(states)}::jsonb) as x(asset_key text, state jsonb)
          on conflict (asset_key) do update set state = excluded.state, updated_at = excluded.updated_at`.execute(trx);
      }
      // A few hundred assets a statement: summaries of scattered partitions are large, and one statement's
      // parameter has a size limit.
      const summaries = [...(commit.summaries ?? [])];
      for (let i = 0; i < summaries.length; i += SUMMARIES_PER_STATEMENT) {
        const rows = summaries
          .slice(i, i + SUMMARIES_PER_STATEMENT)
          .map(([asset_key, s]) => ({ asset_key, partitions: s.partitions, materialized: s.materialized, failed: s.failed }));
        await sql`
          insert into automation_partitions (asset_key, partitions, materialized, failed, updated_at)
          select x.asset_key, x.partitions, x.materialized, x.failed, ${now}
          from jsonb_to_recordset(${toJson(rows)}::jsonb) as x(asset_key text, partitions text, materialized jsonb, failed jsonb)
          on conflict (asset_key) do update
            set partitions = excluded.partitions, materialized = excluded.materialized, failed = excluded.failed, updated_at = excluded.updated_at`.execute(
          trx,
        );
      }
      if (commit.dropSummaries && commit.dropSummaries.length > 0) {
        await sql`delete from automation_partitions where asset_key = any(${[...commit.dropSummaries]}::text[])`.execute(trx);
      }
      if (commit.evaluations.length > 0) {
        const evaluations = commit.evaluations.map((e) => ({
          asset_key: e.assetKey,
          partition_subset: e.partitions,
          decision: e.decision,
          condition: e.condition,
          reasons: e.reasons,
          run_id: e.runId,
        }));
        await sql`
          insert into automation_evaluations (asset_key, partition_subset, decision, condition, reasons, run_id, snapshot_version, tick, evaluated_at)
          select x.asset_key, x.partition_subset, x.decision, x.condition, x.reasons, x.run_id, ${commit.snapshotVersion}, ${commit.tick}, ${now}
          from jsonb_to_recordset(${toJson(evaluations)}::jsonb)
            as x(asset_key text, partition_subset text, decision text, condition text, reasons jsonb, run_id uuid)`.execute(trx);
      }
      const { txId, id, pending } = commit.cursor;
      const next: CursorValue = { ...value, tick: commit.tick + 1, txId, id, pending };
      await sql`update cursors set value = ${toJson(next)}::jsonb, updated_at = ${now} where name = ${CURSOR}`.execute(trx);
      return true;
    });
  }

  async listEvaluations(options: ListEvaluationsOptions): Promise<EvaluationRow[]> {
    const sets = options.partitionSets;
    if (sets && sets.length === 0) return [];
    let q = this.#db
      .selectFrom("automation_evaluations")
      .select([
        "id",
        "asset_key",
        "partition_subset",
        "decision",
        "condition",
        "reasons",
        "run_id",
        "snapshot_version",
        "tick",
        "evaluated_at",
      ])
      .orderBy("id", "desc")
      .limit(options.limit);
    if (options.assetKey !== undefined) q = q.where("asset_key", "=", options.assetKey);
    if (options.beforeId !== undefined) q = q.where("id", "<", options.beforeId);
    // One JSON parameter however many sets (a long IN list would hit the parameter limit).
    if (sets) q = q.where(sql<boolean>`partition_subset in (select jsonb_array_elements_text(${toJson(sets)}::jsonb))`);
    const rows = await q.execute();
    return rows.map((r) => ({
      id: Number(r.id),
      assetKey: r.asset_key,
      decision: r.decision,
      partitions: r.partition_subset,
      condition: r.condition,
      reasons: r.reasons as unknown[],
      runId: r.run_id,
      snapshotVersion: r.snapshot_version,
      tick: Number(r.tick),
      evaluatedAt: r.evaluated_at,
    }));
  }

  async evaluationPartitionSets(assetKey: string): Promise<string[]> {
    // Served by the (asset_key, partition_subset, id desc) index.
    const rows = await this.#db
      .selectFrom("automation_evaluations")
      .select("partition_subset")
      .distinct()
      .where("asset_key", "=", assetKey)
      .execute();
    return rows.map((r) => r.partition_subset);
  }
}

function push(map: Map<string, string[]>, key: string, value: string): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** Stored key ranges, or undefined when the value is not a list of [from, to] string pairs. */
function keyRanges(value: unknown): [string, string][] | undefined {
  if (!Array.isArray(value)) return undefined;
  const out: [string, string][] = [];
  for (const r of value) {
    if (!Array.isArray(r) || r.length !== 2 || typeof r[0] !== "string" || typeof r[1] !== "string") return undefined;
    out.push([r[0], r[1]]);
  }
  return out;
}
