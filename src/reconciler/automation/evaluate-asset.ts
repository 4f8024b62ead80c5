import { createHash } from "node:crypto";
import type { AssetGraph, SnapshotAsset } from "../../graph/index.js";
import {
  PartitionSubset,
  specsEqual,
  UNPARTITIONED,
  upstreamPartitions,
  type PartitionContext,
  type PartitionSpace,
} from "../../partitions/index.js";
import type { AutomationSpec, DepSpec } from "../../sdk/index.js";
import { toKeyRanges, type AssetAutomationState, type KeyRanges } from "./automation-state.js";
import { collectCrons, collectKinds, cronNode, type CronNode } from "./cron-node.js";
import { describeCondition } from "./describe-condition.js";
import { latestDueStart, latestWindow } from "./latest-due.js";

/** What the tick knows about one asset's partitions (from storage, kept current by the event stream). */
export interface AssetView {
  /** Partitions with a materialisation (a later failed try does not remove it). */
  readonly materialized: PartitionSubset;
  /** Partitions whose latest try failed for good. */
  readonly failed: PartitionSubset;
  /** Partitions with a step in an active run. */
  readonly inProgress: PartitionSubset;
  /** Partitions whose last materialisation read an upstream version that has since been replaced. */
  readonly upstreamUpdated: PartitionSubset;
  /** Partitions materialised with a code version other than the current one. */
  readonly codeVersionChanged: PartitionSubset;
  readonly paused: boolean;
  /** A few upstream events behind upstreamUpdated, for the evaluation record. */
  readonly updateCauses: readonly UpdateCause[];
}

export interface UpdateCause {
  readonly upstream: string;
  readonly partition: string;
  readonly eventId: number;
}

export interface EvaluationReason {
  /** The operand or situation: cron_tick, upstream_updated, is_missing, code_version_changed, failed, upstreams_not_ready, in_progress, paused, request_limit, condition_false, no_candidates, cron_problem. */
  readonly operand: string;
  readonly detail: string;
  /** The partitions of the decision it applies to (at most a few ranges). */
  readonly partitions?: KeyRanges;
  readonly upstream?: string;
  readonly eventId?: number;
  readonly tick?: string;
}

export interface EvaluationRecord {
  readonly assetKey: string;
  readonly decision: "requested" | "declined" | "skipped";
  readonly partitions: KeyRanges;
  readonly count: number;
  readonly condition: string;
  readonly reasons: readonly EvaluationReason[];
}

export interface AssetEvaluation {
  readonly requested: PartitionSubset;
  /** Records to store: empty when the decision is the same as last time. */
  readonly records: readonly EvaluationRecord[];
  readonly state: AssetAutomationState;
  /** The next instant a cron of this asset ticks (for scheduling the next evaluation). */
  readonly nextCronTick: Date | null;
}

export interface EvaluationEnv {
  readonly now: Date;
  readonly graph: AssetGraph;
  readonly ctx: PartitionContext | undefined;
  readonly space: (assetKey: string) => PartitionSpace | null;
  readonly view: (assetKey: string) => AssetView;
  /** Partitions requested earlier in this tick (assets are evaluated upstream first). */
  readonly requestedThisTick: (assetKey: string) => PartitionSubset | undefined;
  readonly previous: AssetAutomationState | undefined;
  /** A pause in evaluation longer than this (reconciler down, clock jump) is a gap: see `catchup`. */
  readonly gapMs: number;
  /** Most partitions of one asset requested in one tick; the rest follow in later ticks. */
  readonly maxRequested: number;
}

const MAX_REASON_RANGES = 5;

/**
 * Evaluates one asset's automation condition at `env.now`: a pure function of
 * the definitions, the asset views, the previous state and the clock.
 *
 * Conditions are evaluated over a candidate set (the partitions for which some
 * event-like operand holds: missing after the horizon, an upstream update, a
 * cron tick, a failure, a code change, in progress), never over the whole
 * history, so an asset with 100 000 partitions costs what its candidates cost.
 */
export function evaluateAsset(asset: SnapshotAsset, env: EvaluationEnv): AssetEvaluation {
  const spec = asset.automation;
  if (!spec) throw new Error(`asset "${asset.key}" has no automation`);
  const { now, previous } = env;
  const nowIso = now.toISOString();
  const space = env.space(asset.key);
  const existing = space ? space.all(now) : UNPARTITIONED;
  const view = env.view(asset.key);
  const condition = describeCondition(spec);

  if (view.paused) {
    const records: EvaluationRecord[] = [
      {
        assetKey: asset.key,
        decision: "skipped",
        partitions: [],
        count: 0,
        condition,
        reasons: [{ operand: "paused", detail: "automation is paused for this asset; manual and backfill runs still run" }],
      },
    ];
    const fingerprint = fingerprintOf(records);
    return {
      requested: PartitionSubset.EMPTY,
      records: fingerprint === previous?.fingerprint ? [] : records,
      state: {
        firstEvaluatedAt: previous?.firstEvaluatedAt ?? nowIso,
        // Not advanced while paused: on resume the paused time is a gap.
        lastEvaluatedAt: previous?.lastEvaluatedAt ?? nowIso,
        horizon: previous?.horizon ?? nowIso,
        paused: true,
        owed: previous?.owed ?? {},
        pendingUpdates: previous?.pendingUpdates ?? [],
        fingerprint,
      },
      nextCronTick: null,
    };
  }

  const lastEvaluatedAt = previous ? new Date(previous.lastEvaluatedAt) : undefined;
  const gap =
    !lastEvaluatedAt ||
    previous!.paused ||
    now.getTime() - lastEvaluatedAt.getTime() > env.gapMs ||
    now.getTime() < lastEvaluatedAt.getTime();
  const horizon = !previous ? (asset.catchup ? new Date(0) : now) : gap && !asset.catchup ? now : new Date(previous.horizon);
  const afterHorizon = space ? existing.difference(PartitionSubset.range(0, latestDueStart(space, horizon))) : existing;

  // --- operands --------------------------------------------------------------
  const materialized = view.materialized;
  const failed = view.failed.intersection(existing);
  const inProgress = view.inProgress.intersection(existing);
  // The built-in conditions treat partitions due before the horizon as history (see catchup);
  // the isMissing() operand is literal: every existing partition without a materialisation.
  const isMissing = afterHorizon.difference(materialized);
  const isMissingLiteral = existing.difference(materialized);
  const upstreamUpdated = view.upstreamUpdated.intersection(existing);
  const codeChanged = view.codeVersionChanged.intersection(existing);

  const crons = new Map<string, CronNode>();
  collectCrons(spec, "automation", (path, cron, timezone) => {
    crons.set(path, cronNode(path, cron, timezone, space, existing, asset.catchup, previous, lastEvaluatedAt, gap, now));
  });

  const used = new Set<string>();
  collectKinds(spec, used);
  let candidates = PartitionSubset.EMPTY;
  if (used.has("missing") || used.has("eager")) candidates = candidates.union(isMissing);
  if (used.has("is_missing")) candidates = candidates.union(isMissingLiteral);
  if (used.has("eager") || used.has("upstream_updated")) candidates = candidates.union(upstreamUpdated);
  if (used.has("failed")) candidates = candidates.union(failed);
  if (used.has("code_version_changed")) candidates = candidates.union(codeChanged);
  if (used.has("in_progress")) candidates = candidates.union(inProgress);
  for (const c of crons.values()) candidates = candidates.union(c.due);

  const readiness = readinessOf(asset, candidates, env);

  const evalNode = (node: AutomationSpec, path: string): PartitionSubset => {
    switch (node.kind) {
      case "and":
        return node.operands.reduce((acc, o, i) => acc.intersection(evalNode(o, `${path}.operands[${i}]`)), candidates);
      case "or":
        return node.operands.reduce((acc, o, i) => acc.union(evalNode(o, `${path}.operands[${i}]`)), PartitionSubset.EMPTY);
      case "not":
        return candidates.difference(evalNode(node.operand, `${path}.operand`));
      case "cron":
        return crons.get(path)!.due.intersection(readiness.ready).difference(inProgress);
      case "cron_tick":
        return crons.get(path)!.due;
      case "eager":
        return upstreamUpdated.union(isMissing.difference(failed)).intersection(readiness.ready).difference(inProgress);
      case "missing":
        return isMissing.difference(failed).intersection(readiness.ready).difference(inProgress);
      case "is_missing":
        return isMissingLiteral;
      case "in_progress":
        return inProgress;
      case "failed":
        return failed;
      case "upstream_updated":
        return upstreamUpdated;
      case "upstreams_ready":
        return readiness.ready;
      case "code_version_changed":
        return codeChanged;
      case "in_latest_window":
        return latestWindow(space, existing, node.count, now);
    }
  };
  const wanted = evalNode(spec, "automation").intersection(candidates);
  const requested = wanted.take(env.maxRequested);
  const overLimit = wanted.difference(requested);

  // --- records ---------------------------------------------------------------
  const ranges = (s: PartitionSubset): KeyRanges => toKeyRanges(space, s).slice(0, MAX_REASON_RANGES);
  const records: EvaluationRecord[] = [];
  const triggers: {
    operand: string;
    subset: PartitionSubset;
    detail: (s: PartitionSubset) => string;
    extra?: Partial<EvaluationReason>;
  }[] = [];
  for (const c of crons.values()) {
    triggers.push({
      operand: "cron_tick",
      subset: c.due,
      detail: () =>
        c.tick
          ? `cron "${c.cron}"${c.timezone ? ` (${c.timezone})` : ""} ticked at ${c.tick.toISOString()}`
          : `cron "${c.cron}" ticked earlier; the partition waited`,
      ...(c.tick ? { extra: { tick: c.tick.toISOString() } } : {}),
    });
  }
  if (used.has("eager") || used.has("upstream_updated")) {
    const cause = view.updateCauses[0];
    triggers.push({
      operand: "upstream_updated",
      subset: upstreamUpdated,
      detail: () =>
        cause
          ? `upstream "${cause.upstream}" partition ${cause.partition ? `"${cause.partition}" ` : ""}was materialised again (event ${cause.eventId})` +
            (view.updateCauses.length > 1 ? ` and ${view.updateCauses.length - 1} more upstream change(s)` : "")
          : "an upstream partition it reads was materialised after the version it last read",
      ...(cause ? { extra: { upstream: cause.upstream, eventId: cause.eventId } } : {}),
    });
  }
  if (used.has("missing") || used.has("eager") || used.has("is_missing")) {
    const missing = used.has("is_missing") ? isMissingLiteral : isMissing;
    triggers.push({ operand: "is_missing", subset: missing, detail: () => "the partition is not materialised" });
  }
  if (used.has("code_version_changed")) {
    triggers.push({
      operand: "code_version_changed",
      subset: codeChanged,
      detail: () => `materialised with another code version than "${asset.codeVersion ?? ""}"`,
    });
  }
  if (used.has("failed")) triggers.push({ operand: "failed", subset: failed, detail: () => "its latest try failed" });

  if (!requested.isEmpty()) {
    const reasons: EvaluationReason[] = [];
    for (const t of triggers) {
      const part = t.subset.intersection(requested);
      if (!part.isEmpty()) reasons.push({ operand: t.operand, detail: t.detail(part), partitions: ranges(part), ...t.extra });
    }
    records.push({
      assetKey: asset.key,
      decision: "requested",
      partitions: toKeyRanges(space, requested),
      count: requested.count(),
      condition,
      reasons,
    });
  }

  let triggered = PartitionSubset.EMPTY;
  for (const t of triggers) triggered = triggered.union(t.subset);
  const declined = triggered.intersection(candidates).difference(requested);
  if (!declined.isEmpty()) {
    const reasons: EvaluationReason[] = [];
    for (const t of triggers) {
      const part = t.subset.intersection(declined);
      if (!part.isEmpty()) reasons.push({ operand: t.operand, detail: t.detail(part), partitions: ranges(part), ...t.extra });
    }
    let explained = PartitionSubset.EMPTY;
    for (const b of readiness.blockers) {
      const part = b.subset.intersection(declined);
      if (part.isEmpty()) continue;
      explained = explained.union(part);
      reasons.push({ operand: "upstreams_not_ready", detail: b.detail, partitions: ranges(part), upstream: b.upstream });
    }
    const busy = inProgress.intersection(declined);
    if (!busy.isEmpty()) {
      explained = explained.union(busy);
      reasons.push({ operand: "in_progress", detail: "already being materialised by an active run", partitions: ranges(busy) });
    }
    const failedHere = failed.intersection(declined).difference(upstreamUpdated);
    if (!failedHere.isEmpty() && (used.has("eager") || used.has("missing"))) {
      explained = explained.union(failedHere);
      reasons.push({
        operand: "failed",
        detail: "its latest try failed: it is requested again after an upstream update, or rerun it by hand (tributary clear)",
        partitions: ranges(failedHere),
      });
    }
    if (!overLimit.isEmpty()) {
      explained = explained.union(overLimit);
      reasons.push({
        operand: "request_limit",
        detail: `more than ${env.maxRequested} partitions wanted in one tick; the rest follow in the next ticks`,
        partitions: ranges(overLimit),
      });
    }
    const rest = declined.difference(explained);
    if (!rest.isEmpty())
      reasons.push({ operand: "condition_false", detail: `the condition ${condition} does not hold`, partitions: ranges(rest) });
    records.push({
      assetKey: asset.key,
      decision: "declined",
      partitions: toKeyRanges(space, declined),
      count: declined.count(),
      condition,
      reasons,
    });
  }
  for (const c of crons.values()) {
    if (c.problem)
      records.push({
        assetKey: asset.key,
        decision: "skipped",
        partitions: [],
        count: 0,
        condition,
        reasons: [{ operand: "cron_problem", detail: c.problem }],
      });
  }
  if (records.length === 0) {
    records.push({
      assetKey: asset.key,
      decision: "skipped",
      partitions: [],
      count: 0,
      condition,
      reasons: [
        { operand: "no_candidates", detail: "nothing to do: no missing partition, upstream update or cron tick since the last evaluation" },
      ],
    });
  }

  const fingerprint = fingerprintOf(records);
  const owed: Record<string, KeyRanges> = {};
  for (const c of crons.values()) {
    const left = c.due.difference(requested).difference(inProgress);
    if (!left.isEmpty()) owed[c.path] = toKeyRanges(space, left);
  }
  let nextCronTick: Date | null = null;
  const nextCron: Record<string, string> = {};
  for (const c of crons.values()) {
    if (c.next) nextCron[c.path] = c.next.toISOString();
    if (c.next && (!nextCronTick || c.next < nextCronTick)) nextCronTick = c.next;
  }
  return {
    requested,
    // A request is always news; a decline or skip only when it changed.
    records: !requested.isEmpty() || fingerprint !== previous?.fingerprint ? records : [],
    state: {
      firstEvaluatedAt: previous?.firstEvaluatedAt ?? nowIso,
      lastEvaluatedAt: nowIso,
      horizon: horizon.toISOString(),
      paused: false,
      owed,
      pendingUpdates: previous?.pendingUpdates ?? [],
      ...(Object.keys(nextCron).length ? { nextCron } : {}),
      fingerprint,
    },
    nextCronTick,
  };
}

// --- upstream readiness ------------------------------------------------------

interface Readiness {
  readonly ready: PartitionSubset;
  readonly blockers: readonly { upstream: string; subset: PartitionSubset; detail: string }[];
}

/**
 * The candidates whose every upstream partition exists and is materialised
 * (or requested earlier in this tick into the same run: same partitions
 * definition, identity mapping). Checked by ranges, splitting only where an
 * upstream has gaps, so a year of history costs a handful of mapping calls.
 */
function readinessOf(asset: SnapshotAsset, candidates: PartitionSubset, env: EvaluationEnv): Readiness {
  if (candidates.isEmpty() || asset.deps.length === 0) return { ready: candidates, blockers: [] };
  let ready = candidates;
  const blockers: { upstream: string; subset: PartitionSubset; detail: string }[] = [];
  for (const dep of asset.deps) {
    const up = env.graph.get(dep.assetKey);
    if (!up) continue;
    let available = env.view(up.key).materialized;
    // An upstream with blocking checks is not data to build on while its partition is in an active run: its
    // checks may be about to judge it (or it is being written again).
    if (env.graph.checksFor(up.key).some((c) => c.blocking)) available = available.difference(env.view(up.key).inProgress);
    const sameRun = env.requestedThisTick(up.key);
    if (sameRun && readsSamePartition(asset, up, dep)) available = available.union(sameRun);
    const notMaterialized: PartitionSubset[] = [];
    const notExisting: PartitionSubset[] = [];
    const examples: string[] = [];
    const why = new Set<string>();
    const check = (start: number, end: number): void => {
      const sub = asset.partitions ? PartitionSubset.range(start, end) : UNPARTITIONED;
      const r = upstreamPartitions(asset.partitions, up.partitions, dep.mapping, sub, env.ctx, env.now);
      const lacking = r.subset.difference(available);
      if (r.missing.count === 0 && lacking.isEmpty()) return;
      const none = r.missing.count === 0 && !r.subset.isEmpty() && r.subset.intersection(available).isEmpty();
      if (end - start === 1 || none) {
        (r.missing.count > 0 ? notExisting : notMaterialized).push(sub);
        for (const reason of r.missing.reasons) if (why.size < 3) why.add(reason.replace(/^\d+ /, ""));
        if (examples.length < 3) {
          const upSpace = env.space(up.key);
          const key = r.missing.count > 0 ? r.missing.sample[0] : upSpace ? upSpace.keyAt(lacking.first()!) : "";
          if (key !== undefined) examples.push(key);
        }
        return;
      }
      const mid = start + Math.floor((end - start) / 2);
      check(start, mid);
      check(mid, end);
    };
    for (const [a, b] of candidates.intersection(ready).ranges()) check(a, b);
    const missingSubset = notMaterialized.reduce((x, y) => x.union(y), PartitionSubset.EMPTY);
    const absentSubset = notExisting.reduce((x, y) => x.union(y), PartitionSubset.EMPTY);
    const sample = examples.length ? ` (e.g. ${examples.map((k) => (k === "" ? "its only partition" : `"${k}"`)).join(", ")})` : "";
    if (!missingSubset.isEmpty())
      blockers.push({
        upstream: up.key,
        subset: missingSubset,
        detail: `waiting for upstream "${up.key}": partitions it reads are not materialised${sample}`,
      });
    if (!absentSubset.isEmpty()) {
      blockers.push({
        upstream: up.key,
        subset: absentSubset,
        detail: `upstream "${up.key}" partitions it reads do not exist: ${[...why].join("; ")}${sample}`,
      });
    }
    ready = ready.difference(missingSubset).difference(absentSubset);
  }
  return { ready, blockers };
}

/** Whether a downstream partition reads exactly the upstream partition with its own key, so both can share a run. */
function readsSamePartition(down: SnapshotAsset, up: SnapshotAsset, dep: DepSpec): boolean {
  if (down.partitions === null && up.partitions === null) return true;
  if (!specsEqual(down.partitions, up.partitions)) return false;
  return dep.mapping === null || dep.mapping.kind === "identity";
}

/** What makes a decision different: the decision, its partitions and which operands (and upstreams) explain it — not the wording. */
function fingerprintOf(records: readonly EvaluationRecord[]): string {
  const essence = records.map((r) => [
    r.decision,
    r.partitions,
    r.reasons.map((x) => [x.operand, x.upstream ?? null, x.partitions ?? null]),
  ]);
  return createHash("sha256").update(JSON.stringify(essence)).digest("hex").slice(0, 16);
}
