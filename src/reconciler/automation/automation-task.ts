import { createHash } from "node:crypto";
import type { AssetGraph, SnapshotAsset } from "../../graph/index.js";
import {
  downstreamPartitions,
  loadPartitionContext,
  PartitionSubset,
  UNPARTITIONED,
  type PartitionContext,
  type PartitionSpace,
} from "../../partitions/index.js";
import { plannedRun, planRun } from "../../planner/index.js";
import type { AutomationSpec } from "../../sdk/index.js";
import type {
  AutomationStore,
  DefinitionStore,
  EventCursor,
  GraphCache,
  PartitionSummary,
  RunStore,
  StoredEvaluation,
  StreamEvent,
} from "../../storage/index.js";
import type { ReconcilerTask } from "../reconciler.js";
import { applyEvents, dynamicSignatureOf, restoreSummary, summaryDefinition, summaryOf, type Cache } from "./automation-cache.js";
import { essenceOf, fromKeyRanges, parseState, toKeyRanges, toStored, type AssetAutomationState } from "./automation-state.js";
import { DEFAULT_GAP_MS, DEFAULT_MAX_REQUESTED, runAutomationTick, spaceCache, type RunRequest } from "./automation-tick.js";
import type { AssetView, EvaluationRecord, UpdateCause } from "./evaluate-asset.js";

export interface AutomationTaskOptions {
  readonly store: AutomationStore;
  readonly runs: Pick<RunStore, "createRun">;
  readonly graphs: GraphCache;
  readonly definitions: Pick<DefinitionStore, "listDynamicPartitions">;
  /** This reconciler's id: the holder of the automation lease. */
  readonly owner: string;
  /** A lease not renewed for this long passes to another reconciler (default 15 s). */
  readonly leaseMs?: number;
  /** Every asset is evaluated at least this often, besides the event-driven incremental ticks (default 60 s). */
  readonly fullEvaluationMs?: number;
  /** Ticks are at most this frequent; events arriving meanwhile wait for the next one (default 200 ms). */
  readonly minIntervalMs?: number;
  readonly gapMs?: number;
  readonly maxRequestedPerAsset?: number;
  /** Most events consumed per tick (default 50 000); the rest in the next one. */
  readonly maxEventsPerTick?: number;
  /**
   * An asset whose partitions held take more key ranges than this (default 10 000) stores none with the cursor: a
   * reconciler taking the lease over reads its partition_status rows instead.
   */
  readonly maxSummaryRanges?: number;
  readonly log?: (level: "info" | "warn" | "error", message: string) => void;
}

/** Counters of the last tick, for tests, benchmarks and logs. */
export interface AutomationTickStats {
  readonly tick: number;
  readonly full: boolean;
  readonly events: number;
  readonly evaluated: number;
  readonly runsCreated: number;
  readonly records: number;
  readonly ms: number;
  /** Where the time went (ms): lease+graph, loading partition states, reading events, views, evaluation, runs, commit. */
  readonly phases: Readonly<Record<string, number>>;
  /**
   * When the tick loaded its cache (a lease just taken over, definitions changed): of the assets, how many had their
   * partitions read from partition_status rather than from the summaries stored with the cursor.
   */
  readonly loaded?: { readonly assets: number; readonly fromPartitionStatus: number };
}

const EVENT_PAGE = 5_000;
const MAX_STALE_CHECK = 20_000;

/**
 * The automation loop around the pure tick. One reconciler at a time holds the
 * automation lease; it reads the event stream through the stored cursor,
 * keeps each asset's materialised/failed partitions in memory (rebuilt when it
 * takes the lease over or the definitions change), evaluates the assets the
 * new events touch (every asset on a timer and when a cron tick or window is
 * due), creates the requested runs with idempotency keys, and commits cursor,
 * states and evaluation records together — only while it still holds the lease.
 * A crash between creating runs and committing replays the same tick number,
 * whose idempotency keys make the same requests no-ops.
 */
export class AutomationTask implements ReconcilerTask {
  readonly name = "automation";
  #cache: Cache | undefined;
  #lastRun = Number.NEGATIVE_INFINITY;
  #lastFull = Number.NEGATIVE_INFINITY;
  #nextDueAt: Date | null = null;
  #stats: AutomationTickStats | undefined;

  constructor(private readonly options: AutomationTaskOptions) {}

  get lastStats(): AutomationTickStats | undefined {
    return this.#stats;
  }

  /** Gives the lease up so another reconciler takes automation over at once (call when stopping). */
  async stop(): Promise<void> {
    this.#cache = undefined;
    await this.options.store.releaseLease(this.options.owner);
  }

  /** Forces the next run to evaluate every asset. */
  requestFullEvaluation(): void {
    this.#lastFull = Number.NEGATIVE_INFINITY;
  }

  async run(now: Date): Promise<void> {
    const t = now.getTime();
    if (t - this.#lastRun < (this.options.minIntervalMs ?? 200) && t >= this.#lastRun) return;
    this.#lastRun = t;
    await this.tick(now);
  }

  /** One tick, whatever the interval; returns its counters (undefined when another reconciler holds the lease). */
  async tick(now: Date): Promise<AutomationTickStats | undefined> {
    const started = performance.now();
    const nowMs = now.getTime();
    const phases: Record<string, number> = {};
    let mark = started;
    const phase = (name: string): void => {
      const t1 = performance.now();
      phases[name] = Math.round((phases[name] ?? 0) + t1 - mark);
      mark = t1;
    };
    const o = this.options;
    const lease = await o.store.acquireLease(o.owner, now, o.leaseMs ?? 15_000);
    if (!lease.acquired) {
      this.#cache = undefined;
      return undefined;
    }
    const { version, graph } = await o.graphs.current();
    const ctx = await loadPartitionContext(
      graph.assets.map((a) => a.partitions),
      (name) => o.definitions.listDynamicPartitions(name),
    );
    const space = spaceCache(graph, ctx);
    const dynamicSignature = dynamicSignatureOf(graph, ctx);
    phase("lease");

    let cache = this.#cache;
    const reload = !cache || !lease.continued || cache.version !== version || cache.dynamicSignature !== dynamicSignature;
    if (reload) cache = this.#cache = await this.#load(graph, version, dynamicSignature, space);
    phase("load");
    const c = cache!;
    const full = reload || nowMs - this.#lastFull >= (o.fullEvaluationMs ?? 60_000) || (this.#nextDueAt !== null && now >= this.#nextDueAt);

    // --- the event stream ----------------------------------------------------
    const { events, cursor } = await this.#readEvents(lease.cursor);
    const touched = applyEvents(events, c, graph, space);
    phase("events");

    // Upstream changes become pending updates of the automated assets downstream.
    const pending = new Map<string, PartitionSubset>();
    const pendingOf = (key: string): PartitionSubset => {
      let p = pending.get(key);
      if (!p) {
        p = fromKeyRanges(space(key), c.states.get(key)?.pendingUpdates);
        pending.set(key, p);
      }
      return p;
    };
    const affected = new Set<string>();
    const eventCauses = new Map<string, UpdateCause[]>();
    for (const [upKey, keys] of touched) {
      const up = graph.get(upKey);
      if (!up) continue;
      if (up.automation) affected.add(upKey);
      if (keys.materialized.length === 0) continue;
      const upSpace = space(upKey);
      const upSubset = upSpace ? upSpace.subset(keys.materialized.filter((k) => upSpace.has(k))) : UNPARTITIONED;
      for (const down of graph.downstreamOf(upKey)) {
        if (!down.automation || down.kind === "source") continue;
        for (const dep of down.deps) {
          if (dep.assetKey !== upKey) continue;
          const mapped = downstreamPartitions(up.partitions, down.partitions, dep.mapping, upSubset, ctx, now);
          if (mapped.isEmpty()) continue;
          pending.set(down.key, pendingOf(down.key).union(mapped));
          affected.add(down.key);
          const causes = eventCauses.get(down.key) ?? [];
          for (const e of keys.events) if (causes.length < 5) causes.push({ upstream: upKey, partition: e.partitionKey, eventId: e.id });
          eventCauses.set(down.key, causes);
        }
      }
    }
    const [inProgressKeys, paused] = await Promise.all([o.store.inProgress(), o.store.pausedAssets()]);
    const automated = graph.assets.filter((a) => a.automation && a.kind !== "source");
    for (const a of automated) {
      const s = c.states.get(a.key);
      // Assets still waiting on something (an owed cron partition, a pending update) are looked at every tick,
      // and so are assets just paused or resumed.
      if (s && (s.pendingUpdates.length > 0 || Object.keys(s.owed).length > 0 || s.paused !== paused.has(a.key))) affected.add(a.key);
    }
    const evaluate = full ? automated.map((a) => a.key) : [...affected].filter((k) => graph.get(k)?.automation);

    // --- views ----------------------------------------------------------------
    const stale = await this.#staleness(evaluate, graph, space, pendingOf);
    const codeChanged = await this.#codeChanges(evaluate, graph, space);
    const subsetOf = (key: string, keys: readonly string[] | undefined): PartitionSubset => {
      if (!keys || keys.length === 0) return PartitionSubset.EMPTY;
      const s = space(key);
      return s ? s.subset(keys.filter((k) => s.has(k))) : UNPARTITIONED;
    };
    const views = new Map<string, AssetView>();
    const view = (key: string): AssetView => {
      let v = views.get(key);
      if (!v) {
        const st = stale.get(key);
        v = {
          materialized: c.materialized.get(key) ?? PartitionSubset.EMPTY,
          failed: c.failed.get(key) ?? PartitionSubset.EMPTY,
          inProgress: subsetOf(key, inProgressKeys.get(key)),
          upstreamUpdated: st?.subset ?? PartitionSubset.EMPTY,
          codeVersionChanged: codeChanged.get(key) ?? PartitionSubset.EMPTY,
          paused: paused.has(key),
          updateCauses: st?.causes.length ? st.causes : (eventCauses.get(key) ?? []),
        };
        views.set(key, v);
      }
      return v;
    };

    phase("views");
    const result = runAutomationTick({
      graph,
      ctx,
      now,
      view,
      states: c.states,
      only: full ? undefined : new Set(evaluate),
      gapMs: o.gapMs ?? DEFAULT_GAP_MS,
      maxRequestedPerAsset: o.maxRequestedPerAsset ?? DEFAULT_MAX_REQUESTED,
      space,
    });

    // --- runs -------------------------------------------------------------------
    const runIdsByAsset = new Map<string, string[]>();
    const failedRequests: EvaluationRecord[] = [];
    let runsCreated = 0;
    phase("evaluate");
    // Runs are independent: created a few at a time (each is its own transaction).
    const queue = [...result.runs];
    const createNext = async (): Promise<void> => {
      for (let request = queue.shift(); request; request = queue.shift()) {
        try {
          const runId = await this.#createRun(request, graph, version, ctx, c, lease.tick, now);
          runsCreated++;
          for (const k of request.assetKeys) appendTo(runIdsByAsset, k, runId);
        } catch (err) {
          // One bad request (e.g. a partition that no longer plans) never stops the others.
          o.log?.(
            "warn",
            `automation could not create a run for ${request.assetKeys.join(", ")}${request.partitionKey ? ` @ ${request.partitionKey}` : ""}: ${(err as Error).message}`,
          );
          for (const k of request.assetKeys) {
            failedRequests.push({
              assetKey: k,
              decision: "declined",
              partitions: request.partitionKey === null ? [] : [[request.partitionKey, request.partitionKey]],
              count: 1,
              condition: "",
              reasons: [{ operand: "plan_failed", detail: (err as Error).message }],
            });
          }
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(4, queue.length) }, createNext));

    phase("runs");
    // --- commit -------------------------------------------------------------------
    const states = new Map<string, AssetAutomationState>();
    for (const [key, s] of result.states) {
      const st = stale.get(key);
      // A request consumes the update (a failed rerun is not retried for the same update);
      // partitions still behind and not requested (in progress, waiting) stay pending.
      const pendingNow = (st ? st.subset : pending.get(key))?.difference(result.requested.get(key) ?? PartitionSubset.EMPTY);
      states.set(key, pendingNow ? { ...s, pendingUpdates: toKeyRanges(space(key), pendingNow) } : s);
    }
    for (const [key, p] of pending) {
      if (states.has(key)) continue;
      const prev = c.states.get(key);
      if (prev) states.set(key, { ...prev, pendingUpdates: toKeyRanges(space(key), p) });
    }
    const evaluations: StoredEvaluation[] = [...result.records, ...failedRequests].map((r) => toStored(r, runIdsByAsset.get(r.assetKey)));
    // Only states that changed are written: a full tick of 10 000 quiet assets writes
    // nothing but the cursor. lastEvaluatedAt alone is refreshed once per gapMs / 4, so a
    // restarted reconciler still sees that evaluation was continuous.
    const refreshMs = (o.gapMs ?? DEFAULT_GAP_MS) / 4;
    const toWrite = new Map<string, AssetAutomationState>();
    for (const [key, s] of states) {
      const essence = essenceOf(s);
      const written = c.written.get(key);
      if (written && written.essence === essence && nowMs - written.at < refreshMs && nowMs >= written.at) continue;
      toWrite.set(key, s);
    }
    // The partitions held, as of the cursor committed with them, of the assets whose partitions changed. One too
    // scattered to store is dropped instead: a stored summary must never be older than the cursor.
    const summaries = new Map<string, PartitionSummary>();
    const dropSummaries = [...c.orphans];
    for (const key of c.unsaved) {
      const a = graph.get(key);
      const definition = a && summaryDefinition(a);
      if (definition === undefined) continue;
      const ranges = (c.materialized.get(key)?.rangeCount ?? 0) + (c.failed.get(key)?.rangeCount ?? 0);
      if (ranges <= (o.maxSummaryRanges ?? 10_000)) summaries.set(key, summaryOf(c, key, definition, space(key)));
      else dropSummaries.push(key);
    }
    const committed = await o.store.commitTick(
      o.owner,
      { tick: lease.tick, cursor, snapshotVersion: version, states: toWrite, evaluations, summaries, dropSummaries },
      now,
    );
    if (!committed) {
      // The lease passed to another reconciler meanwhile: its tick wins; our caches may be behind.
      this.#cache = undefined;
      o.log?.("warn", `automation tick ${lease.tick} not committed: the lease passed to another reconciler`);
      return undefined;
    }
    phase("commit");
    c.unsaved.clear();
    c.orphans = [];
    for (const [k, s] of states) c.states.set(k, s);
    for (const [k, s] of toWrite) c.written.set(k, { essence: essenceOf(s), at: nowMs });
    if (full) {
      this.#lastFull = nowMs;
      this.#nextDueAt = result.nextDueAt;
    } else if (result.nextDueAt && (!this.#nextDueAt || result.nextDueAt < this.#nextDueAt)) {
      this.#nextDueAt = result.nextDueAt;
    }
    this.#stats = {
      tick: lease.tick,
      full,
      events: events.length,
      evaluated: result.evaluated,
      runsCreated,
      records: evaluations.length,
      ms: performance.now() - started,
      phases,
      ...(reload ? { loaded: { assets: graph.assets.length, fromPartitionStatus: c.readFromRows } } : {}),
    };
    return this.#stats;
  }

  /**
   * The cache of a reconciler that just took the lease (or whose definitions changed): each asset's partitions from
   * the summary stored with the cursor, when it was taken in the same partitions definition; the others', and the
   * assets with dynamic partitions', from partition_status.
   */
  async #load(graph: AssetGraph, version: number, dynamicSignature: string, space: (key: string) => PartitionSpace | null): Promise<Cache> {
    const [summaries, storedStates] = await Promise.all([this.options.store.loadSummaries(), this.options.store.loadStates()]);
    const materialized = new Map<string, PartitionSubset>();
    const failed = new Map<string, PartitionSubset>();
    const unsaved = new Set<string>();
    const fromRows: SnapshotAsset[] = [];
    for (const a of graph.assets) {
      const definition = summaryDefinition(a);
      const restored = restoreSummary(summaries.get(a.key), definition, space(a.key));
      if (restored) {
        materialized.set(a.key, restored.materialized);
        failed.set(a.key, restored.failed);
      } else {
        fromRows.push(a);
        if (definition !== undefined) unsaved.add(a.key);
      }
    }
    if (fromRows.length > 0) {
      const partitionStates = await this.options.store.partitionStates(
        fromRows.length === graph.assets.length ? undefined : fromRows.map((a) => a.key),
      );
      for (const a of fromRows) {
        const s = space(a.key);
        const toSubset = (keys: string[] | undefined): PartitionSubset =>
          !keys || keys.length === 0 ? PartitionSubset.EMPTY : s ? s.subset(keys.filter((k) => s.has(k))) : UNPARTITIONED;
        materialized.set(a.key, toSubset(partitionStates.materialized.get(a.key)));
        failed.set(a.key, toSubset(partitionStates.failed.get(a.key)));
      }
    }
    const states = new Map<string, AssetAutomationState>();
    const written = new Map<string, { essence: string; at: number }>();
    for (const [key, value] of storedStates) {
      const state = parseState(value);
      if (!state) continue;
      states.set(key, state);
      written.set(key, { essence: essenceOf(state), at: Date.parse(state.lastEvaluatedAt) });
    }
    const orphans = [...summaries.keys()].filter((key) => !graph.has(key));
    return { version, dynamicSignature, materialized, failed, states, written, unsaved, orphans, readFromRows: fromRows.length };
  }

  /**
   * The events after the cursor, page by page, and the cursor past them. What
   * is done with them needs only the stream's order (see readEventStream): one
   * transaction's events in id order, and a transaction that began after
   * another committed after it — a check result after the materialisation it
   * judges, a wipe after what it wipes. Pending updates and staleness are
   * settled against partition_status and lineage, not against event order.
   */
  async #readEvents(after: EventCursor): Promise<{ events: StreamEvent[]; cursor: EventCursor }> {
    const max = this.options.maxEventsPerTick ?? 50_000;
    const events: StreamEvent[] = [];
    let cursor = after;
    while (events.length < max) {
      const page = await this.options.store.readEvents(cursor, Math.min(EVENT_PAGE, max - events.length));
      events.push(...page.events);
      cursor = page.cursor;
      if (page.events.length < EVENT_PAGE) break;
    }
    return { events, cursor };
  }

  /** Settles pending upstream updates: which of them are still behind an upstream (and why). */
  async #staleness(
    evaluate: readonly string[],
    graph: AssetGraph,
    space: (key: string) => PartitionSpace | null,
    pendingOf: (key: string) => PartitionSubset,
  ): Promise<Map<string, { subset: PartitionSubset; causes: UpdateCause[] }>> {
    const refs: { assetKey: string; partitionKey: string }[] = [];
    const checked = new Set<string>();
    for (const key of evaluate) {
      if (!usesUpstreamUpdates(graph.get(key)?.automation ?? null)) continue;
      const p = pendingOf(key);
      if (p.isEmpty()) continue;
      const s = space(key);
      checked.add(key);
      let n = 0;
      for (const k of s ? s.keys(p) : [""]) {
        refs.push({ assetKey: key, partitionKey: k });
        if (++n >= MAX_STALE_CHECK) break;
      }
    }
    const out = new Map<string, { subset: PartitionSubset; causes: UpdateCause[] }>();
    for (const key of checked) out.set(key, { subset: PartitionSubset.EMPTY, causes: [] });
    if (refs.length === 0) return out;
    const rows = await this.options.store.staleByUpstream(refs);
    const keysByAsset = new Map<string, string[]>();
    for (const r of rows) {
      appendTo(keysByAsset, r.assetKey, r.partitionKey);
      const entry = out.get(r.assetKey)!;
      if (r.upstream && r.eventId !== null && entry.causes.length < 5) {
        entry.causes.push({ upstream: r.upstream, partition: r.upstreamPartition ?? "", eventId: r.eventId });
      }
    }
    for (const [key, keys] of keysByAsset) {
      const s = space(key);
      out.get(key)!.subset = s ? s.subset(keys.filter((k) => s.has(k))) : UNPARTITIONED;
    }
    return out;
  }

  async #codeChanges(
    evaluate: readonly string[],
    graph: AssetGraph,
    space: (key: string) => PartitionSpace | null,
  ): Promise<Map<string, PartitionSubset>> {
    const assets = evaluate
      .map((k) => graph.get(k))
      .filter((a): a is SnapshotAsset => !!a?.codeVersion && usesKind(a.automation, "code_version_changed"))
      .map((a) => ({ assetKey: a.key, codeVersion: a.codeVersion! }));
    const out = new Map<string, PartitionSubset>();
    if (assets.length === 0) return out;
    for (const [key, keys] of await this.options.store.codeVersionChanged(assets)) {
      const s = space(key);
      out.set(key, s ? s.subset(keys.filter((k) => s.has(k))) : UNPARTITIONED);
    }
    return out;
  }

  async #createRun(
    request: RunRequest,
    graph: AssetGraph,
    version: number,
    ctx: PartitionContext,
    c: Cache,
    tick: number,
    now: Date,
  ): Promise<string> {
    const plan = planRun({
      graph,
      version,
      assets: request.assetKeys,
      partitions: request.partitionKey === null ? undefined : { kind: "keys", keys: [request.partitionKey] },
      now,
      dynamicKeys: ctx.dynamicKeys,
      materialized: (key) => c.materialized.get(key) ?? PartitionSubset.EMPTY,
      includeUpstream: false,
    });
    if (plan.missing.length > 0) {
      const m = plan.missing[0]!;
      throw new Error(`upstream "${m.assetKey}" has ${m.count} partition(s) not there (e.g. ${m.sample.slice(0, 3).join(", ")})`);
    }
    const group = createHash("sha256").update(request.assetKeys.join("\u0000")).digest("hex").slice(0, 12);
    const { runId } = await this.options.runs.createRun(
      plannedRun(graph, plan, {
        origin: "automation",
        tags: { "tributary/automation-tick": String(tick) },
        idempotencyKey: `automation:${tick}:${group}:${request.partitionKey ?? ""}`,
      }),
      now,
    );
    return runId;
  }
}

function appendTo<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

function usesKind(spec: AutomationSpec | null, kind: string): boolean {
  if (!spec) return false;
  if (spec.kind === kind) return true;
  if (spec.kind === "and" || spec.kind === "or") return spec.operands.some((o) => usesKind(o, kind));
  if (spec.kind === "not") return usesKind(spec.operand, kind);
  return false;
}

function usesUpstreamUpdates(spec: AutomationSpec | null): boolean {
  return usesKind(spec, "eager") || usesKind(spec, "upstream_updated");
}
