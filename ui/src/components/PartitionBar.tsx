// The status of every partition of an asset as one bar on a <canvas>, drawn from the API's run-length ranges:
// the cost follows the number of ranges and the bar's width in pixels, never one DOM node per partition.
import { useCallback, useEffect, useRef, useState } from "react";
import { formatCount } from "../format";
import { PARTITION_COLORS } from "../status";
import { useWidth } from "./use-width";
import "./PartitionBar.css";

export type PartitionStatusName = "MISSING" | "MATERIALIZING" | "MATERIALIZED" | "FAILED" | "STALE" | "TIMED_OUT" | "ERASED";

export interface StatusRange {
  readonly status: PartitionStatusName;
  readonly from: string;
  readonly to: string;
  readonly count: number;
}

/** Most telling first: where pixels (or matrix cells) hold several partitions, the first status present wins. */
export const STATUS_PRECEDENCE: readonly PartitionStatusName[] = [
  "FAILED",
  "TIMED_OUT",
  "MATERIALIZING",
  "ERASED",
  "STALE",
  "MISSING",
  "MATERIALIZED",
];
const STATUS_CODE = new Map(STATUS_PRECEDENCE.map((s, i) => [s, i]));

/** The ranges with their start indices, for O(log n) "which range holds partition i". */
export interface RangeIndex {
  readonly ranges: readonly StatusRange[];
  /** starts[k] = index of ranges[k]'s first partition; starts[ranges.length] = total. */
  readonly starts: Float64Array;
  readonly total: number;
}

export function indexRanges(ranges: readonly StatusRange[]): RangeIndex {
  const starts = new Float64Array(ranges.length + 1);
  for (let k = 0; k < ranges.length; k++) starts[k + 1] = starts[k]! + ranges[k]!.count;
  return { ranges, starts, total: starts[ranges.length]! };
}

/** The position in `ranges` of the range holding partition `index` (0 <= index < total). */
export function rangeAt(index: RangeIndex, i: number): number {
  let lo = 0;
  let hi = index.ranges.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (index.starts[mid]! <= i) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Each partition's status as a precedence code (see STATUS_PRECEDENCE): what the matrix aggregates from. */
export function statusCodes(index: RangeIndex): Uint8Array {
  const out = new Uint8Array(index.total);
  index.ranges.forEach((r, k) => out.fill(STATUS_CODE.get(r.status) ?? 0, index.starts[k]!, index.starts[k + 1]!));
  return out;
}

export const statusOfCode = (code: number): PartitionStatusName => STATUS_PRECEDENCE[code] ?? "MISSING";

export const statusLabel = (s: string): string => s.toLowerCase().replace(/_/g, " ");

/** Partition indices [from, to], both included. */
export interface IndexSelection {
  readonly from: number;
  readonly to: number;
}

const BAR_HEIGHT = 36;

/**
 * The bar. Hovering shows the partition under the cursor (its key from `keyAt`, once known) and status; a drag
 * selects a range of partitions and a click one partition (`onSelect`). Sets `data-ready` once drawn.
 */
export function PartitionBar({
  ranges,
  selection,
  onSelect,
  keyAt,
}: {
  ranges: RangeIndex;
  selection: IndexSelection | undefined;
  onSelect: (selection: IndexSelection) => void;
  keyAt: ((index: number) => string) | undefined;
}) {
  const wrap = useRef<HTMLDivElement>(null);
  const base = useRef<HTMLCanvasElement>(null);
  const overlay = useRef<HTMLCanvasElement>(null);
  const width = useWidth(wrap);
  const [drawn, setDrawn] = useState(false);
  const [hover, setHover] = useState<{ index: number; x: number } | undefined>(undefined);
  const drag = useRef<number | undefined>(undefined);
  const [dragging, setDragging] = useState<IndexSelection | undefined>(undefined);
  const { total } = ranges;

  useEffect(() => {
    const canvas = base.current;
    if (!canvas || width === 0) return;
    const started = performance.now();
    drawBar(canvas, ranges, width);
    // For bench/ui-partitions.ts: when the bar was first drawn (since navigation) and how long drawing took.
    performance.measure("partition-bar-draw", { start: started, end: performance.now() });
    setDrawn(true);
  }, [ranges, width]);

  const shown = dragging ?? selection;
  useEffect(() => {
    const canvas = overlay.current;
    if (!canvas || width === 0) return;
    drawOverlay(canvas, width, total, shown, hover?.index);
  }, [width, total, shown, hover?.index]);

  const indexAt = useCallback(
    (clientX: number): number => {
      const rect = base.current!.getBoundingClientRect();
      const x = Math.min(Math.max(clientX - rect.left, 0), rect.width - 0.001);
      return Math.min(total - 1, Math.floor((x / rect.width) * total));
    },
    [total],
  );

  if (total === 0)
    return (
      <div className="partition-bar-empty muted" data-testid="partition-bar" data-ready="true">
        No partitions exist yet.
      </div>
    );

  const hovered = hover ? ranges.ranges[rangeAt(ranges, hover.index)] : undefined;
  return (
    <div
      className="partition-bar"
      ref={wrap}
      data-testid="partition-bar"
      data-ready={drawn ? "true" : undefined}
      data-total={total}
      onMouseMove={(e) => {
        const index = indexAt(e.clientX);
        setHover({ index, x: e.clientX - e.currentTarget.getBoundingClientRect().left });
        if (drag.current !== undefined) setDragging(order(drag.current, index));
      }}
      onMouseLeave={() => setHover(undefined)}
      onMouseDown={(e) => {
        if (e.button !== 0) return;
        e.preventDefault();
        const index = indexAt(e.clientX);
        drag.current = index;
        setDragging({ from: index, to: index });
        const up = (ev: MouseEvent) => {
          window.removeEventListener("mouseup", up);
          const start = drag.current;
          drag.current = undefined;
          setDragging(undefined);
          if (start !== undefined) onSelect(order(start, indexAt(ev.clientX)));
        };
        window.addEventListener("mouseup", up);
      }}
    >
      <canvas ref={base} className="partition-bar-canvas" style={{ height: BAR_HEIGHT }} />
      <canvas ref={overlay} className="partition-bar-overlay" style={{ height: BAR_HEIGHT }} />
      {hover && hovered ? (
        <div className="partition-tooltip" data-testid="partition-tooltip" style={{ left: Math.min(Math.max(hover.x, 80), width - 80) }}>
          <div className="mono" data-testid="partition-tooltip-key">
            {keyAt ? keyAt(hover.index) : `partition #${formatCount(hover.index + 1)}`}
          </div>
          <div>
            <span className="swatch" style={{ background: PARTITION_COLORS[hovered.status] }} />{" "}
            <span data-testid="partition-tooltip-status">{statusLabel(hovered.status)}</span>{" "}
            <span className="muted">
              · <span data-testid="partition-tooltip-index">{formatCount(hover.index + 1)}</span> of {formatCount(total)}
            </span>
          </div>
          {dragging && dragging.to > dragging.from ? (
            <div className="muted">{formatCount(dragging.to - dragging.from + 1)} partitions selected</div>
          ) : null}
        </div>
      ) : null}
    </div>
  );
}

const order = (a: number, b: number): IndexSelection => (a <= b ? { from: a, to: b } : { from: b, to: a });

function sizeCanvas(canvas: HTMLCanvasElement, width: number, height: number): CanvasRenderingContext2D {
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  canvas.style.width = `${width}px`;
  const ctx = canvas.getContext("2d")!;
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  return ctx;
}

/**
 * With fewer partitions than device pixels each range is a rectangle. With more, each pixel column holds several
 * partitions: it is stacked by the share of each status in it (the most telling on top, at least one pixel each),
 * so that a single failed partition among a hundred thousand still shows.
 */
function drawBar(canvas: HTMLCanvasElement, index: RangeIndex, width: number): void {
  const ctx = sizeCanvas(canvas, width, BAR_HEIGHT);
  const ratio = window.devicePixelRatio || 1;
  const columns = Math.max(1, Math.round(width * ratio));
  const { total, ranges, starts } = index;
  ctx.clearRect(0, 0, width, BAR_HEIGHT);
  if (total === 0) return;
  if (total <= columns) {
    ranges.forEach((r, k) => {
      ctx.fillStyle = PARTITION_COLORS[r.status] ?? "#a1a1aa";
      const x0 = (starts[k]! / total) * width;
      const x1 = (starts[k + 1]! / total) * width;
      ctx.fillRect(x0, 0, Math.max(x1 - x0, 1 / ratio), BAR_HEIGHT);
    });
    return;
  }
  const statuses = STATUS_PRECEDENCE.length;
  const counts = new Float64Array(columns * statuses);
  // Column c holds the partitions i with floor(i · columns / total) = c: integer arithmetic, so that every range
  // advances by at least one partition per step.
  ranges.forEach((r, k) => {
    const code = STATUS_CODE.get(r.status) ?? 0;
    let a = starts[k]!;
    const b = starts[k + 1]!;
    while (a < b) {
      const column = Math.floor((a * columns) / total);
      const end = Math.min(b, Math.ceil(((column + 1) * total) / columns));
      counts[column * statuses + code]! += end - a;
      a = end;
    }
  });
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  const height = Math.round(BAR_HEIGHT * ratio);
  for (let c = 0; c < columns; c++) {
    let y = 0;
    let sum = 0;
    for (let s = 0; s < statuses; s++) sum += counts[c * statuses + s]!;
    for (let s = 0; s < statuses && y < height; s++) {
      const n = counts[c * statuses + s]!;
      if (n === 0) continue;
      const h = s === statuses - 1 ? height - y : Math.max(1, Math.round((n / sum) * height));
      ctx.fillStyle = PARTITION_COLORS[STATUS_PRECEDENCE[s]!] ?? "#a1a1aa";
      ctx.fillRect(c, y, 1, Math.min(h, height - y));
      y += h;
    }
    if (y < height) {
      // Rounding left a gap: the column's last status fills it.
      for (let s = statuses - 1; s >= 0; s--) {
        if (counts[c * statuses + s]! > 0) {
          ctx.fillStyle = PARTITION_COLORS[STATUS_PRECEDENCE[s]!] ?? "#a1a1aa";
          ctx.fillRect(c, y, 1, height - y);
          break;
        }
      }
    }
  }
}

function drawOverlay(
  canvas: HTMLCanvasElement,
  width: number,
  total: number,
  selection: IndexSelection | undefined,
  hover: number | undefined,
): void {
  const ctx = sizeCanvas(canvas, width, BAR_HEIGHT);
  ctx.clearRect(0, 0, width, BAR_HEIGHT);
  if (total === 0) return;
  const x = (i: number) => (i / total) * width;
  if (selection) {
    const x0 = x(selection.from);
    const w = Math.max(x(selection.to + 1) - x0, 2);
    ctx.fillStyle = "rgba(37, 99, 235, 0.25)";
    ctx.fillRect(x0, 0, w, BAR_HEIGHT);
    ctx.strokeStyle = "#1d4ed8";
    ctx.lineWidth = 2;
    ctx.strokeRect(x0 + 1, 1, Math.max(w - 2, 1), BAR_HEIGHT - 2);
  }
  if (hover !== undefined) {
    ctx.fillStyle = "rgba(24, 24, 27, 0.8)";
    ctx.fillRect(Math.max(0, x(hover + 0.5) - 0.5), 0, 1, BAR_HEIGHT);
  }
}

/** Counts by status, each clickable (to list those partitions). */
export function StatusLegend({
  counts,
  active,
  onPick,
}: {
  counts: Readonly<Record<string, number | null | undefined>>;
  active: string | undefined;
  onPick: (status: PartitionStatusName) => void;
}) {
  const fields: [PartitionStatusName, string][] = [
    ["MATERIALIZED", "materialized"],
    ["STALE", "stale"],
    ["MISSING", "missing"],
    ["FAILED", "failed"],
    ["MATERIALIZING", "materializing"],
    ["TIMED_OUT", "timedOut"],
    ["ERASED", "erased"],
  ];
  // Statuses only some assets ever have are listed when present.
  const list = fields.filter(([s, f]) => (counts[f] ?? 0) > 0 || (s !== "TIMED_OUT" && s !== "ERASED"));
  return (
    <div className="status-legend" data-testid="status-legend">
      <span className="muted">
        <span data-testid="legend-total">{formatCount(counts.total)}</span> partitions:
      </span>
      {list.map(([status, field]) => (
        <button
          type="button"
          key={status}
          className={`legend-item${active === status ? " active" : ""}`}
          data-testid={`legend-${status}`}
          data-count={counts[field] ?? 0}
          onClick={() => onPick(status)}
          title={`List the ${statusLabel(status)} partitions`}
        >
          <span className="swatch" style={{ background: PARTITION_COLORS[status] }} />
          {statusLabel(status)} <strong>{formatCount(counts[field] ?? 0)}</strong>
        </button>
      ))}
    </div>
  );
}
