// Small pieces the runs and backfills pages share: URL query-string state, progress bars, run timing.
import { useCallback, useEffect, useMemo, useState } from "react";
import { useLocation, useSearch } from "wouter";
import { formatCount } from "../format";
import { stateColor } from "../status";

/**
 * The page's query string as a record, and a setter that merges changes into it (undefined or "" removes a key);
 * `replace` keeps the back button for real navigation rather than every keystroke of a filter.
 */
export function useUrlParams(): [Readonly<Record<string, string>>, (changes: Record<string, string | undefined>, options?: { replace?: boolean }) => void] {
  const search = useSearch();
  const [location, navigate] = useLocation();
  const params = useMemo(() => Object.fromEntries(new URLSearchParams(search)), [search]);
  const set = useCallback(
    (changes: Record<string, string | undefined>, options: { replace?: boolean } = {}) => {
      const next = new URLSearchParams(search);
      for (const [k, v] of Object.entries(changes)) {
        if (v === undefined || v === "") next.delete(k);
        else next.set(k, v);
      }
      const qs = next.toString();
      navigate(qs ? `${location}?${qs}` : location, { replace: options.replace ?? false });
    },
    [search, location, navigate],
  );
  return [params, set];
}

export const ACTIVE_RUN_STATUSES: ReadonlySet<string> = new Set(["queued", "running"]);
export const ACTIVE_BACKFILL_STATUSES: ReadonlySet<string> = new Set(["requested", "running", "canceling"]);

/** The current time, ticking every `everyMs` while `active` (for running durations and the Gantt's "now" line). */
export function useNow(active: boolean, everyMs = 1_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [active, everyMs]);
  return now;
}

/** From start to end, or to now while it has not ended; undefined before it starts. */
export function elapsedMs(startedAt: string | null | undefined, endedAt: string | null | undefined, now: number): number | undefined {
  if (!startedAt) return undefined;
  return (endedAt ? new Date(endedAt).getTime() : now) - new Date(startedAt).getTime();
}

/** Segments of a progress bar: each a count, a colour and a name (for the tooltip); the rest of `total` stays grey. */
export function ProgressBar({ total, parts, testId }: { total: number; parts: readonly { count: number; color: string; label: string }[]; testId?: string }) {
  const title = parts.map((p) => `${formatCount(p.count)} ${p.label}`).join(", ") + ` of ${formatCount(total)}`;
  return (
    <div className="progress" title={title} data-testid={testId}>
      {parts.map((p) =>
        p.count > 0 && total > 0 ? <span key={p.label} style={{ width: `${(100 * p.count) / total}%`, background: p.color }} /> : null,
      )}
    </div>
  );
}

/** A run's steps: ended well / failed / active of the total (stepsDone counts every ended step, failed ones too). */
export function StepsProgress({ run }: { run: { stepsTotal: number; stepsDone: number; stepsFailed: number; stepsActive: number } }) {
  return (
    <div className="steps-progress">
      <ProgressBar
        total={run.stepsTotal}
        parts={[
          { count: Math.max(run.stepsDone - run.stepsFailed, 0), color: stateColor("success"), label: "ended well" },
          { count: run.stepsFailed, color: stateColor("failed"), label: "failed" },
          { count: run.stepsActive, color: stateColor("running"), label: "active" },
        ]}
      />
      <span className="muted">
        {formatCount(run.stepsDone)}/{formatCount(run.stepsTotal)} ended
        {run.stepsFailed > 0 ? <span className="failed-count"> · {formatCount(run.stepsFailed)} failed</span> : null}
      </span>
    </div>
  );
}

/** A backfill's partitions: done / failed / in progress of those requested. */
export function BackfillProgress({ backfill, testId }: { backfill: { requested: number; done: number; failed: number; inProgress: number }; testId?: string }) {
  return (
    <div className="steps-progress">
      <ProgressBar
        total={backfill.requested}
        {...(testId ? { testId } : {})}
        parts={[
          { count: backfill.done, color: stateColor("success"), label: "done" },
          { count: backfill.failed, color: stateColor("failed"), label: "failed" },
          { count: backfill.inProgress, color: stateColor("running"), label: "in progress" },
        ]}
      />
      <span className="muted">
        {formatCount(backfill.done)}/{formatCount(backfill.requested)}
        {backfill.failed > 0 ? <span className="failed-count"> · {formatCount(backfill.failed)} failed</span> : null}
        {backfill.inProgress > 0 ? <span> · {formatCount(backfill.inProgress)} running</span> : null}
      </span>
    </div>
  );
}

/** A datetime-local input's value ("2026-01-02T03:04") as an ISO instant, or undefined when empty or invalid. */
export function localToIso(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

/** What names a step: its asset, partition and map index, and the check it runs (null or absent for the asset's own step). */
export interface StepIdentity {
  assetKey: string;
  partitionKey: string;
  mapIndex: number;
  checkName?: string | null;
  /** A mapped step's readable label. */
  mapLabel?: string | null;
}

/** A step's name as plain text ("shop/orders · check not_empty", "feeds/parsed #3 b.csv"), for tooltips and titles. */
export function stepLabel(step: StepIdentity): string {
  if (step.checkName) return `${step.assetKey} · check ${step.checkName}`;
  if (step.mapIndex >= 0) return `${step.assetKey} #${step.mapIndex}${step.mapLabel ? ` ${step.mapLabel}` : ""}`;
  return step.assetKey;
}

/** The small "check" badge and the check's name, after the asset key of a check's step; nothing for an asset's own step. */
export function CheckTag({ checkName }: { checkName: string | null | undefined }) {
  if (!checkName) return null;
  return (
    <span className="step-check" data-testid="step-check" data-check={checkName}>
      <span className="check-badge">check</span> <span className="mono">{checkName}</span>
    </span>
  );
}

/** A mapped step's index and label, after its asset key; nothing for other steps. */
export function MapTag({ mapIndex, mapLabel }: { mapIndex: number; mapLabel?: string | null | undefined }) {
  if (mapIndex < 0) return null;
  return (
    <span className="muted" data-testid="step-map" data-map-index={mapIndex}>
      {" "}#{mapIndex}
      {mapLabel ? <span className="mono"> {mapLabel}</span> : null}
    </span>
  );
}

/**
 * Steps in the given order, except that the mapped steps and check steps of an (asset, partition) follow that
 * asset's step (mapped steps first, by index; then checks in their own relative order), so the rows of one
 * partition read together. A step whose asset step is not in the list keeps its place.
 */
export function checksAfterTheirAsset<S extends StepIdentity>(steps: readonly S[]): S[] {
  const key = (s: S) => `${s.assetKey}\u0000${s.partitionKey}`;
  const follows = (s: S) => Boolean(s.checkName) || s.mapIndex >= 0;
  const ownerOf = new Map<string, S>();
  for (const s of steps) if (!follows(s)) ownerOf.set(key(s), s);
  const followersOf = new Map<S, S[]>();
  for (const s of steps) {
    const owner = follows(s) ? ownerOf.get(key(s)) : undefined;
    if (!owner) continue;
    const list = followersOf.get(owner);
    if (list) list.push(s);
    else followersOf.set(owner, [s]);
  }
  const out: S[] = [];
  for (const s of steps) {
    if (follows(s) && ownerOf.has(key(s))) continue;
    out.push(s);
    const followers = followersOf.get(s);
    if (!followers) continue;
    out.push(...followers.filter((f) => !f.checkName).sort((a, b) => a.mapIndex - b.mapIndex));
    out.push(...followers.filter((f) => f.checkName));
  }
  return out;
}
