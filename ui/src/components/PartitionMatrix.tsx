// A multi-partitioned asset's status as a matrix of two of its dimensions, on a <canvas>. Each partition's status
// comes from the run-length ranges (one byte each); cells hold every partition with those two keys (all values of
// any other dimension), and when there are more keys than pixels, several keys share a cell. A cell shows the
// most telling status it holds (see STATUS_PRECEDENCE).
import { useEffect, useMemo, useRef, useState } from "react";
import { formatCount } from "../format";
import { PARTITION_COLORS } from "../status";
import { STATUS_PRECEDENCE, statusCodes, statusLabel, statusOfCode, type RangeIndex } from "./PartitionBar";
import { useWidth } from "./use-width";
import "./PartitionBar.css";

export interface MatrixAxis {
  readonly name: string;
  readonly size: number;
  keyAt(index: number): string;
}

/** Digits [from, to] (both included) of the row and the column dimension. */
export interface CellSelection {
  readonly rows: readonly [number, number];
  readonly cols: readonly [number, number];
}

const MAX_HEIGHT = 420;
const LABEL_WIDTH = 110;

interface Layout {
  readonly rows: number;
  readonly cols: number;
  /** Cells drawn (≤ keys when keys share cells). */
  readonly gridRows: number;
  readonly gridCols: number;
  readonly cellW: number;
  readonly cellH: number;
}

function layoutOf(rows: number, cols: number, width: number): Layout {
  const gridCols = Math.max(1, Math.min(cols, Math.floor(width)));
  const cellW = width / gridCols;
  const gridRows = Math.max(1, Math.min(rows, Math.floor(MAX_HEIGHT / 2)));
  const cellH = Math.max(2, Math.min(20, Math.floor(MAX_HEIGHT / gridRows)));
  return { rows, cols, gridRows, gridCols, cellW, cellH };
}

/** Partition indices of the asset: Σ digitₖ · strideₖ over the axes (linearisation order). */
function stridesOf(axes: readonly MatrixAxis[]): number[] {
  const strides = new Array<number>(axes.length).fill(1);
  for (let k = axes.length - 2; k >= 0; k--) strides[k] = strides[k + 1]! * axes[k + 1]!.size;
  return strides;
}

/** Every partition index whose row and column digits fall in the selection, ascending. */
export function selectedIndices(
  axes: readonly MatrixAxis[],
  rowAxis: number,
  colAxis: number,
  selection: CellSelection,
  total: number,
): number[] {
  const strides = stridesOf(axes);
  const out: number[] = [];
  for (let i = 0; i < total; i++) {
    const r = Math.floor(i / strides[rowAxis]!) % axes[rowAxis]!.size;
    const c = Math.floor(i / strides[colAxis]!) % axes[colAxis]!.size;
    if (r >= selection.rows[0] && r <= selection.rows[1] && c >= selection.cols[0] && c <= selection.cols[1]) out.push(i);
  }
  return out;
}

export function PartitionMatrix({
  ranges,
  axes,
  rowAxis,
  colAxis,
  selection,
  onSelect,
}: {
  ranges: RangeIndex;
  axes: readonly MatrixAxis[];
  rowAxis: number;
  colAxis: number;
  selection: CellSelection | undefined;
  onSelect: (selection: CellSelection) => void;
}) {
  const wrap = useRef<HTMLDivElement>(null);
  const base = useRef<HTMLCanvasElement>(null);
  const overlay = useRef<HTMLCanvasElement>(null);
  const width = useWidth(wrap);
  const [drawn, setDrawn] = useState(false);
  const [hover, setHover] = useState<{ row: number; col: number; x: number; y: number } | undefined>(undefined);
  const drag = useRef<{ row: number; col: number } | undefined>(undefined);
  const [dragging, setDragging] = useState<CellSelection | undefined>(undefined);
  const rowsAxis = axes[rowAxis]!;
  const colsAxis = axes[colAxis]!;
  const layout = useMemo(
    () => layoutOf(rowsAxis.size, colsAxis.size, Math.max(1, width - LABEL_WIDTH)),
    [rowsAxis.size, colsAxis.size, width],
  );
  const codes = useMemo(() => statusCodes(ranges), [ranges]);
  const strides = useMemo(() => stridesOf(axes), [axes]);

  /** Most telling status code per grid cell (255: no partition). */
  const grid = useMemo(() => {
    const out = new Uint8Array(layout.gridRows * layout.gridCols).fill(255);
    const rs = strides[rowAxis]!;
    const cs = strides[colAxis]!;
    for (let i = 0; i < codes.length; i++) {
      const r = Math.floor(((Math.floor(i / rs) % layout.rows) * layout.gridRows) / layout.rows);
      const c = Math.floor(((Math.floor(i / cs) % layout.cols) * layout.gridCols) / layout.cols);
      const cell = r * layout.gridCols + c;
      if (codes[i]! < out[cell]!) out[cell] = codes[i]!;
    }
    return out;
  }, [codes, strides, rowAxis, colAxis, layout]);

  const height = layout.gridRows * layout.cellH;
  const plotWidth = layout.gridCols * layout.cellW;

  useEffect(() => {
    const canvas = base.current;
    if (!canvas || width === 0) return;
    const ctx = sizeCanvas(canvas, plotWidth, height);
    ctx.clearRect(0, 0, plotWidth, height);
    const gap = layout.cellH >= 6 && layout.cellW >= 6 ? 1 : 0;
    for (let r = 0; r < layout.gridRows; r++) {
      for (let c = 0; c < layout.gridCols; c++) {
        const code = grid[r * layout.gridCols + c]!;
        if (code === 255) continue;
        ctx.fillStyle = PARTITION_COLORS[statusOfCode(code)] ?? "#a1a1aa";
        ctx.fillRect(c * layout.cellW, r * layout.cellH, layout.cellW - gap, layout.cellH - gap);
      }
    }
    setDrawn(true);
  }, [grid, layout, width, plotWidth, height]);

  const shown = dragging ?? selection;
  useEffect(() => {
    const canvas = overlay.current;
    if (!canvas || width === 0) return;
    const ctx = sizeCanvas(canvas, plotWidth, height);
    ctx.clearRect(0, 0, plotWidth, height);
    if (shown) {
      const x0 = (shown.cols[0] / layout.cols) * plotWidth;
      const x1 = ((shown.cols[1] + 1) / layout.cols) * plotWidth;
      const y0 = (shown.rows[0] / layout.rows) * height;
      const y1 = ((shown.rows[1] + 1) / layout.rows) * height;
      ctx.fillStyle = "rgba(37, 99, 235, 0.25)";
      ctx.fillRect(x0, y0, Math.max(x1 - x0, 2), Math.max(y1 - y0, 2));
      ctx.strokeStyle = "#1d4ed8";
      ctx.lineWidth = 2;
      ctx.strokeRect(x0 + 1, y0 + 1, Math.max(x1 - x0 - 2, 1), Math.max(y1 - y0 - 2, 1));
    }
  }, [shown, layout, width, plotWidth, height]);

  const digitsAt = (e: React.MouseEvent | MouseEvent): { row: number; col: number; x: number; y: number } => {
    const rect = base.current!.getBoundingClientRect();
    const x = Math.min(Math.max(e.clientX - rect.left, 0), rect.width - 0.001);
    const y = Math.min(Math.max(e.clientY - rect.top, 0), rect.height - 0.001);
    return { row: Math.floor((y / rect.height) * layout.rows), col: Math.floor((x / rect.width) * layout.cols), x, y };
  };

  const hRow = hover?.row;
  const hCol = hover?.col;
  const hoverInfo = useMemo(() => {
    if (hRow === undefined || hCol === undefined) return undefined;
    // Every partition with these two keys (all values of other dimensions): counts by status.
    const counts = new Array<number>(STATUS_PRECEDENCE.length).fill(0);
    const rs = strides[rowAxis]!;
    const cs = strides[colAxis]!;
    for (let i = 0; i < codes.length; i++) {
      if (Math.floor(i / rs) % layout.rows === hRow && Math.floor(i / cs) % layout.cols === hCol) counts[codes[i]!]!++;
    }
    return counts;
  }, [hRow, hCol, codes, strides, rowAxis, colAxis, layout]);

  return (
    <div className="partition-matrix-grid" data-testid="partition-matrix" data-ready={drawn ? "true" : undefined} data-total={ranges.total}>
      <div className="partition-matrix-axis" style={{ width: LABEL_WIDTH - 8, height, position: "relative" }}>
        {layout.gridRows === layout.rows && layout.cellH >= 12 ? (
          // One label a row when rows are tall enough to read them.
          Array.from({ length: layout.rows }, (_, r) => (
            <div
              key={r}
              className="mono matrix-row-label"
              style={{ top: r * layout.cellH, height: layout.cellH, lineHeight: `${layout.cellH}px` }}
              title={`${rowsAxis.name}=${rowsAxis.keyAt(r)}`}
            >
              {rowsAxis.keyAt(r)}
            </div>
          ))
        ) : (
          <>
            <div>
              <strong>{rowsAxis.name}</strong> ↓ ({formatCount(rowsAxis.size)})
            </div>
            <div className="mono">{rowsAxis.size > 0 ? rowsAxis.keyAt(0) : ""}</div>
            {rowsAxis.size > 1 ? <div className="mono">… {rowsAxis.keyAt(rowsAxis.size - 1)}</div> : null}
          </>
        )}
      </div>
      <div ref={wrap} style={{ minWidth: 0 }}>
        <div
          className="partition-matrix"
          style={{ width: plotWidth, height }}
          onMouseMove={(e) => {
            const d = digitsAt(e);
            setHover(d);
            if (drag.current) setDragging(box(drag.current, d));
          }}
          onMouseLeave={() => setHover(undefined)}
          onMouseDown={(e) => {
            if (e.button !== 0) return;
            e.preventDefault();
            const d = digitsAt(e);
            drag.current = d;
            setDragging(box(d, d));
            const up = (ev: MouseEvent) => {
              window.removeEventListener("mouseup", up);
              const start = drag.current;
              drag.current = undefined;
              setDragging(undefined);
              if (start) onSelect(box(start, digitsAt(ev)));
            };
            window.addEventListener("mouseup", up);
          }}
        >
          <canvas ref={base} style={{ width: plotWidth, height }} />
          <canvas ref={overlay} className="partition-matrix-overlay" style={{ width: plotWidth, height }} />
          {hover && hoverInfo ? (
            <div
              className="partition-tooltip"
              data-testid="partition-tooltip"
              style={{ left: Math.min(Math.max(hover.x, 90), plotWidth - 90), top: hover.y + 14 }}
            >
              <div className="mono" data-testid="partition-tooltip-key">
                {rowsAxis.name}={rowsAxis.keyAt(hover.row)} · {colsAxis.name}={colsAxis.keyAt(hover.col)}
              </div>
              {hoverInfo.map((n, code) =>
                n > 0 ? (
                  <div key={STATUS_PRECEDENCE[code]}>
                    <span className="swatch" style={{ background: PARTITION_COLORS[statusOfCode(code)] }} />{" "}
                    <span data-testid="partition-tooltip-status">{statusLabel(statusOfCode(code))}</span>
                    {axes.length > 2 ? <span className="muted"> · {formatCount(n)}</span> : null}
                  </div>
                ) : null,
              )}
            </div>
          ) : null}
        </div>
        <div className="partition-matrix-axis">
          <strong>{rowsAxis.name}</strong> by <strong>{colsAxis.name}</strong> → ({formatCount(colsAxis.size)}){" "}
          <span className="mono">{colsAxis.size > 0 ? colsAxis.keyAt(0) : ""}</span>
          {colsAxis.size > 1 ? <span className="mono"> … {colsAxis.keyAt(colsAxis.size - 1)}</span> : null}
        </div>
      </div>
    </div>
  );
}

function box(a: { row: number; col: number }, b: { row: number; col: number }): CellSelection {
  return { rows: [Math.min(a.row, b.row), Math.max(a.row, b.row)], cols: [Math.min(a.col, b.col), Math.max(a.col, b.col)] };
}

function sizeCanvas(canvas: HTMLCanvasElement, width: number, height: number): CanvasRenderingContext2D {
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.max(1, Math.round(width * ratio));
  canvas.height = Math.max(1, Math.round(height * ratio));
  const ctx = canvas.getContext("2d")!;
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  return ctx;
}
