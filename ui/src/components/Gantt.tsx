// A run's steps on a timeline: one row per step, one segment per try (waiting in the queue, then running), coloured by
// state, with a "now" line while the run is active. SVG rectangles only: hundreds of steps stay cheap to draw.
import { useMemo, useRef } from "react";
import { formatDuration } from "../format";
import { stateColor } from "../status";
import { checksAfterTheirAsset, stepLabel } from "./step-identity";
import { CheckTag, MapTag } from "./StepTags";
import { useWidth } from "./use-width";
import "./Gantt.css";

export interface GanttTry {
  tryNumber: number;
  state: string;
  queuedAt: string | null;
  startedAt: string | null;
  endedAt: string | null;
}

export interface GanttStep {
  id: string;
  assetKey: string;
  partitionKey: string;
  mapIndex: number;
  /** The asset check the step runs; null or absent for the asset's own step. */
  checkName?: string | null;
  /** A mapped step's readable label. */
  mapLabel?: string | null;
  state: string;
  scheduledAt: string | null;
  queuedAt: string | null;
  startedAt: string | null;
  endedAt: string | null;
  tries: readonly GanttTry[];
}

export type GanttSort = "start" | "plan";

const ROW_H = 22;
const BAR_H = 14;
const AXIS_H = 24;
const ACTIVE_TRY_STATES: ReadonlySet<string> = new Set(["pending", "scheduled", "queued", "running"]);

const ms = (iso: string | null | undefined): number | undefined => (iso ? new Date(iso).getTime() : undefined);

/** When a step first entered the timeline (its first try's queueing, else start), for sorting by start. */
function firstTime(step: GanttStep): number | undefined {
  let first: number | undefined;
  for (const t of step.tries) {
    const at = ms(t.queuedAt) ?? ms(t.startedAt);
    if (at !== undefined && (first === undefined || at < first)) first = at;
  }
  return first ?? ms(step.startedAt) ?? ms(step.queuedAt);
}

interface Segment {
  key: string;
  x0: number;
  x1: number;
  color: string;
  queued: boolean;
  title: string;
}

export function Gantt({
  steps,
  now,
  live,
  sort,
  selectedId,
  onSelect,
}: {
  steps: readonly GanttStep[];
  now: number;
  /** The run has not ended: open segments run to now, and the now line shows. */
  live: boolean;
  sort: GanttSort;
  selectedId: string | undefined;
  onSelect: (stepId: string) => void;
}) {
  const trackRef = useRef<HTMLDivElement>(null);
  const width = useWidth(trackRef, 800);

  const rows = useMemo(() => {
    const withStart = steps.map((s) => ({ step: s, start: firstTime(s) }));
    if (sort === "start") {
      withStart.sort((a, b) => (a.start ?? Infinity) - (b.start ?? Infinity) || Number(a.step.id) - Number(b.step.id));
    } else {
      withStart.sort((a, b) => Number(a.step.id) - Number(b.step.id));
    }
    return checksAfterTheirAsset(withStart.map((r) => r.step));
  }, [steps, sort]);

  // The time span: from the earliest queueing to the latest end (or now while live).
  let t0 = Infinity;
  let t1 = -Infinity;
  for (const s of steps) {
    for (const t of s.tries) {
      for (const at of [ms(t.queuedAt), ms(t.startedAt), ms(t.endedAt)]) {
        if (at === undefined) continue;
        t0 = Math.min(t0, at);
        t1 = Math.max(t1, at);
      }
    }
  }
  // The clock ticks once a second while the data may be fresher: "now" is never before the latest instant seen.
  const nowAt = Math.max(now, t1);
  if (live && Number.isFinite(t0)) t1 = nowAt;
  const hasTimes = Number.isFinite(t0);
  if (hasTimes) {
    // A little room on the right, so the last segment's end and the now line stay visible.
    const span = Math.max(t1 - t0, 200);
    t1 = t0 + span * 1.02;
  }
  const usable = Math.max(width - 8, 100);
  const x = (t: number) => 4 + ((t - t0) / (t1 - t0)) * usable;

  const segmentsOf = (step: GanttStep): Segment[] => {
    if (!hasTimes) return [];
    const out: Segment[] = [];
    for (const t of step.tries) {
      const queued = ms(t.queuedAt);
      const started = ms(t.startedAt);
      const ended = ms(t.endedAt);
      const open = ACTIVE_TRY_STATES.has(t.state) && live;
      const waitEnd = started ?? ended ?? (open ? nowAt : undefined);
      if (queued !== undefined && waitEnd !== undefined && waitEnd > queued) {
        out.push({
          key: `${t.tryNumber}q`,
          x0: x(queued),
          x1: x(waitEnd),
          color: stateColor("queued"),
          queued: true,
          title: `try ${t.tryNumber}: queued ${formatDuration(waitEnd - queued)}`,
        });
      }
      if (started !== undefined) {
        const end = ended ?? (open ? nowAt : started);
        out.push({
          key: `${t.tryNumber}r`,
          x0: x(started),
          x1: Math.max(x(end), x(started) + 2),
          color: stateColor(t.state),
          queued: false,
          title: `try ${t.tryNumber}: ${t.state.replace(/_/g, " ")}, ${formatDuration(end - started)}${ended === undefined ? " so far" : ""}`,
        });
      }
    }
    return out;
  };

  const ticks = hasTimes ? axisTicks(t0, t1, Math.max(2, Math.floor(usable / 140))) : [];
  const height = rows.length * ROW_H;

  return (
    <div className="gantt" data-testid="gantt" data-ready={hasTimes || rows.length === 0 ? "true" : "empty"} data-rows={rows.length}>
      <div className="gantt-head">
        <div className="gantt-labels-head">
          Step <span className="muted">({rows.length})</span>
        </div>
        <svg className="gantt-axis" width={width} height={AXIS_H}>
          {ticks.map((t) => (
            <g key={t}>
              <line x1={x(t)} x2={x(t)} y1={AXIS_H - 6} y2={AXIS_H} stroke="#a1a1aa" />
              <text x={x(t)} y={AXIS_H - 9} textAnchor={x(t) < 40 ? "start" : x(t) > width - 40 ? "end" : "middle"} className="gantt-tick">
                {tickLabel(t, ticks[1] !== undefined ? ticks[1] - ticks[0]! : 1_000)}
              </text>
            </g>
          ))}
        </svg>
      </div>
      <div className="gantt-body">
        <div className="gantt-labels">
          {rows.map((s) => (
            <div
              key={s.id}
              className={`gantt-label${s.id === selectedId ? " selected" : ""}`}
              style={{ height: ROW_H }}
              onClick={() => onSelect(s.id)}
              title={`${stepLabel(s)}${s.partitionKey ? ` [${s.partitionKey}]` : ""} — ${s.state}`}
              data-testid="gantt-label"
              data-step-id={s.id}
              {...(s.checkName ? { "data-check": s.checkName } : {})}
            >
              <span className="gantt-dot" style={{ background: stateColor(s.state) }} />
              {s.assetKey}
              <CheckTag checkName={s.checkName} />
              {s.partitionKey ? <span className="muted"> {s.partitionKey}</span> : null}
              <MapTag mapIndex={s.mapIndex} mapLabel={s.mapLabel} />
            </div>
          ))}
        </div>
        <div className="gantt-track" ref={trackRef}>
          <svg width={width} height={height} role="img" aria-label="step timeline">
            {ticks.map((t) => (
              <line key={t} x1={x(t)} x2={x(t)} y1={0} y2={height} stroke="#f4f4f5" />
            ))}
            {rows.map((s, i) => (
              <g
                key={s.id}
                transform={`translate(0, ${i * ROW_H})`}
                onClick={() => onSelect(s.id)}
                className={`gantt-row${s.id === selectedId ? " selected" : ""}`}
                data-testid="gantt-row"
                data-step-id={s.id}
                data-state={s.state}
                data-tries={s.tries.length}
                {...(s.checkName ? { "data-check": s.checkName } : {})}
              >
                <rect x={0} y={0} width={width} height={ROW_H} className="gantt-row-bg" />
                {segmentsOf(s).map((seg) => (
                  <rect
                    key={seg.key}
                    x={seg.x0}
                    y={seg.queued ? (ROW_H - BAR_H / 2) / 2 : (ROW_H - BAR_H) / 2}
                    width={Math.max(seg.x1 - seg.x0, 1)}
                    height={seg.queued ? BAR_H / 2 : BAR_H}
                    rx={2}
                    fill={seg.color}
                    opacity={seg.queued ? 0.6 : 1}
                    data-testid={seg.queued ? "gantt-queued" : "gantt-try"}
                  >
                    <title>{seg.title}</title>
                  </rect>
                ))}
              </g>
            ))}
            {live && hasTimes ? (
              <line x1={x(nowAt)} x2={x(nowAt)} y1={0} y2={height} className="gantt-now" data-testid="gantt-now" />
            ) : null}
          </svg>
        </div>
      </div>
      {!hasTimes && rows.length > 0 ? <p className="muted">No step has been queued yet.</p> : null}
    </div>
  );
}

/** About `count` round instants between t0 and t1 (100 ms, 1 s, 5 s, 15 s, 1 min … steps). */
function axisTicks(t0: number, t1: number, count: number): number[] {
  const steps = [0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400].map(
    (s) => s * 1_000,
  );
  const span = t1 - t0;
  const step = steps.find((s) => span / s <= count) ?? steps.at(-1)!;
  const out: number[] = [];
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) out.push(t);
  return out;
}

/** A tick's time of day; with milliseconds when the ticks are less than a second apart. */
function tickLabel(t: number, step: number): string {
  const d = new Date(t);
  const time = d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
  return step < 1_000 ? `${time}.${String(d.getMilliseconds()).padStart(3, "0")}` : time;
}
