import { useEffect, useMemo, useRef, useState } from "react";
import { PARTITION_COLORS } from "../status";
import { NODE_HEIGHT, NODE_WIDTH, type LayoutInput, type LayoutResult, type Point } from "./graph-layout";
import { layoutInWorker } from "./graph-layout-client";
import "./AssetGraph.css";

export interface GraphNode {
  readonly key: string;
  readonly group: string;
  /** A PartitionStatus (MATERIALIZED, STALE, …) the node is coloured by. */
  readonly status: string;
  /** Shown on hover. */
  readonly detail?: string;
}

interface View {
  x: number;
  y: number;
  k: number;
}

/** The part of the graph (graph coordinates) whose nodes are drawn one by one, with their labels. */
interface Region {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

const MIN_ZOOM = 0.02;
const MAX_ZOOM = 3;
/** Below this zoom labels are unreadable: nodes are only coloured blocks. */
const LABEL_ZOOM = 0.3;
/** Statuses whose colour is light: their label is dark. */
const LIGHT = new Set(["MISSING", "STALE"]);

function label(key: string): string {
  return key.length <= 27 ? key : `…${key.slice(-26)}`;
}

const f = (n: number) => n.toFixed(1);

function pathOf(points: readonly Point[]): string {
  if (points.length === 0) return "";
  const [first, ...rest] = points;
  if (rest.length === 1) {
    // A straight-laid edge: a horizontal S-curve from node to node.
    const b = rest[0]!;
    const mid = (first!.x + b.x) / 2;
    return `M${f(first!.x)} ${f(first!.y)}C${f(mid)} ${f(first!.y)} ${f(mid)} ${f(b.y)} ${f(b.x)} ${f(b.y)}`;
  }
  return `M${f(first!.x)} ${f(first!.y)}${rest.map((p) => `L${f(p.x)} ${f(p.y)}`).join("")}`;
}

/**
 * The asset graph in SVG: laid out in a Web Worker (dagre), zoom with the wheel, pan by dragging, click a node to
 * open it. `focus` centres and highlights one asset. The container gets data-ready="true" once the graph is drawn.
 *
 * Thousands of SVG elements make the first draw slow, so every node is first drawn as part of one path per status
 * colour, and only the nodes in view, once zoomed in far enough to read them, are drawn one by one with their
 * labels. Clicks and the tooltip find the node under the pointer from the layout, whichever way it is drawn.
 */
export function AssetGraph({
  nodes,
  edges,
  focus,
  onOpen,
}: {
  nodes: readonly GraphNode[];
  edges: readonly { from: string; to: string }[];
  focus?: string | undefined;
  onOpen: (key: string) => void;
}) {
  const input = useMemo<LayoutInput>(() => ({ nodes: nodes.map((n) => ({ id: n.key, group: n.group })), edges }), [nodes, edges]);
  const [state, setState] = useState<{ input: LayoutInput; layout?: LayoutResult; error?: Error } | undefined>(undefined);
  const [region, setRegion] = useState<Region | null>(null);
  const container = useRef<HTMLDivElement>(null);
  const viewport = useRef<SVGGElement>(null);
  const tooltip = useRef<HTMLDivElement>(null);
  const view = useRef<View>({ x: 0, y: 0, k: 1 });
  const drag = useRef<{ x: number; y: number; moved: boolean } | undefined>(undefined);
  const regionTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const byKey = useMemo(() => new Map(nodes.map((n) => [n.key, n])), [nodes]);

  useEffect(() => {
    const abort = new AbortController();
    container.current?.removeAttribute("data-ready");
    layoutInWorker(input, abort.signal).then(
      (layout) => {
        performance.mark("asset-graph-laid-out");
        setState({ input, layout });
      },
      (error: Error) => !abort.signal.aborted && setState({ input, error }),
    );
    return () => abort.abort();
  }, [input]);

  const layout = state?.input === input ? state.layout : undefined;
  const positions = useMemo(() => new Map(layout?.nodes.map((n) => [n.id, n]) ?? []), [layout]);

  /** The region to draw in detail for the current view (with a margin, so small pans need no redraw); null when far. */
  const wantedRegion = (): Region | null => {
    const box = container.current?.getBoundingClientRect();
    const { x, y, k } = view.current;
    if (!box || k < LABEL_ZOOM) return null;
    const w = box.width / k;
    const h = box.height / k;
    const x0 = -x / k;
    const y0 = -y / k;
    return { x0: x0 - w / 2, y0: y0 - h / 2, x1: x0 + w * 1.5, y1: y0 + h * 1.5 };
  };

  const apply = (immediate = false) => {
    const { x, y, k } = view.current;
    viewport.current?.setAttribute("transform", `translate(${f(x)},${f(y)}) scale(${k.toFixed(4)})`);
    container.current?.setAttribute("data-zoom", k.toFixed(3));
    const update = () =>
      setRegion((current) => {
        const next = wantedRegion();
        if (!next || !current) return next === current ? current : next;
        // Keep the current one while the view is still inside it.
        const box = container.current?.getBoundingClientRect();
        const inside =
          box && -x / k >= current.x0 && -y / k >= current.y0 && (box.width - x) / k <= current.x1 && (box.height - y) / k <= current.y1;
        return inside && next.x1 - next.x0 >= (current.x1 - current.x0) * 0.5 ? current : next;
      });
    clearTimeout(regionTimer.current);
    if (immediate) update();
    else regionTimer.current = setTimeout(update, 80);
  };
  useEffect(() => () => clearTimeout(regionTimer.current), []);

  const fit = () => {
    const box = container.current?.getBoundingClientRect();
    if (!layout || !box) return;
    const k = Math.max(MIN_ZOOM, Math.min(1, (box.width - 20) / Math.max(1, layout.width), (box.height - 20) / Math.max(1, layout.height)));
    view.current = { k, x: (box.width - layout.width * k) / 2, y: Math.max(10, (box.height - layout.height * k) / 2) };
    apply(true);
  };

  const zoomBy = (factor: number, cx?: number, cy?: number) => {
    const box = container.current?.getBoundingClientRect();
    if (!box) return;
    const px = cx ?? box.width / 2;
    const py = cy ?? box.height / 2;
    const { x, y, k } = view.current;
    const next = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, k * factor));
    view.current = { k: next, x: px - ((px - x) * next) / k, y: py - ((py - y) * next) / k };
    apply();
  };

  // The first view once laid out: centred on the focused asset at full size, or the whole graph.
  useEffect(() => {
    if (!layout) return;
    const box = container.current?.getBoundingClientRect();
    const target = focus ? positions.get(focus) : undefined;
    if (target && box) {
      view.current = { k: 1, x: box.width / 2 - target.x, y: box.height / 2 - target.y };
      apply(true);
    } else fit();
  }, [layout, focus]);

  // Drawn: after the commit that shows the layout (and its first detail region), the next frame paints it.
  useEffect(() => {
    if (!layout) return;
    // Not before the nodes in view are drawn one by one (the region follows the first view a commit later).
    if ((wantedRegion() === null) !== (region === null)) return;
    const frame = requestAnimationFrame(() => {
      if (container.current?.hasAttribute("data-ready")) return;
      performance.mark("asset-graph-drawn");
      container.current?.setAttribute("data-ready", "true");
    });
    return () => cancelAnimationFrame(frame);
  }, [layout, region]);

  useEffect(() => {
    const el = container.current;
    if (!el) return;
    const onWheel = (e: WheelEvent) => {
      e.preventDefault();
      const box = el.getBoundingClientRect();
      zoomBy(Math.exp(-e.deltaY * 0.0015), e.clientX - box.left, e.clientY - box.top);
    };
    el.addEventListener("wheel", onWheel, { passive: false });
    return () => el.removeEventListener("wheel", onWheel);
  });

  // Groups, edges and every node as a block of its status colour: a handful of elements whatever the size.
  const base = useMemo(() => {
    if (!layout) return null;
    const normal: string[] = [];
    const near: string[] = [];
    for (const e of layout.edges) (focus && (e.from === focus || e.to === focus) ? near : normal).push(pathOf(e.points));
    const blocks = new Map<string, string[]>();
    for (const p of layout.nodes) {
      const status = byKey.get(p.id)?.status ?? "MISSING";
      const d = `M${f(p.x - NODE_WIDTH / 2)} ${f(p.y - NODE_HEIGHT / 2)}h${NODE_WIDTH}v${NODE_HEIGHT}h${-NODE_WIDTH}z`;
      const list = blocks.get(status);
      if (list) list.push(d);
      else blocks.set(status, [d]);
    }
    return (
      <>
        {layout.groups.map((g) => (
          <g key={`group:${g.name}`} className="graph-group" data-group={g.name}>
            <rect x={g.x} y={g.y} width={g.width} height={g.height} rx={8} />
            <text x={g.x + 10} y={g.y + 18}>
              {g.name}
            </text>
          </g>
        ))}
        <path className="graph-edges" d={normal.join("")} />
        {near.length ? <path className="graph-edges near" d={near.join("")} /> : null}
        {[...blocks].map(([status, ds]) => (
          <path
            key={status}
            className="graph-blocks"
            d={ds.join("")}
            fill={PARTITION_COLORS[status] ?? "#a1a1aa"}
            data-status={status}
            data-count={ds.length}
          />
        ))}
      </>
    );
  }, [layout, byKey, focus]);

  // The nodes in the detail region, one by one with their labels.
  const detailed = useMemo(() => {
    if (!layout || !region) return null;
    return layout.nodes
      .filter(
        (p) =>
          p.x + NODE_WIDTH / 2 >= region.x0 &&
          p.x - NODE_WIDTH / 2 <= region.x1 &&
          p.y + NODE_HEIGHT / 2 >= region.y0 &&
          p.y - NODE_HEIGHT / 2 <= region.y1,
      )
      .map((p) => {
        const status = byKey.get(p.id)?.status ?? "MISSING";
        return (
          <g
            key={p.id}
            className={`graph-node${p.id === focus ? " focus" : ""}`}
            transform={`translate(${f(p.x - NODE_WIDTH / 2)},${f(p.y - NODE_HEIGHT / 2)})`}
            data-key={p.id}
            data-status={status}
            data-testid="graph-node"
          >
            <rect width={NODE_WIDTH} height={NODE_HEIGHT} rx={5} fill={PARTITION_COLORS[status] ?? "#a1a1aa"} />
            <text x={8} y={NODE_HEIGHT / 2 + 4} className={LIGHT.has(status) ? "dark" : ""}>
              {label(p.id)}
            </text>
          </g>
        );
      });
  }, [layout, region, byKey, focus]);

  /** The node under the pointer, from the layout. */
  const nodeAt = (clientX: number, clientY: number): GraphNode | undefined => {
    const box = container.current?.getBoundingClientRect();
    if (!layout || !box) return undefined;
    const { x, y, k } = view.current;
    const gx = (clientX - box.left - x) / k;
    const gy = (clientY - box.top - y) / k;
    const hit = layout.nodes.find((p) => Math.abs(gx - p.x) <= NODE_WIDTH / 2 && Math.abs(gy - p.y) <= NODE_HEIGHT / 2);
    return hit ? byKey.get(hit.id) : undefined;
  };

  const showTooltip = (e: React.PointerEvent) => {
    const tip = tooltip.current;
    const box = container.current?.getBoundingClientRect();
    if (!tip || !box) return;
    const n = nodeAt(e.clientX, e.clientY);
    container.current?.classList.toggle("over-node", !!n);
    if (!n) {
      tip.hidden = true;
      return;
    }
    tip.hidden = false;
    tip.textContent = `${n.key}\n${n.status.toLowerCase().replace("_", " ")}${n.detail ? `\n${n.detail}` : ""}`;
    tip.style.left = `${e.clientX - box.left + 14}px`;
    tip.style.top = `${e.clientY - box.top + 14}px`;
  };
  const onPointerDown = (e: React.PointerEvent) => {
    if (e.button !== 0) return;
    drag.current = { x: e.clientX, y: e.clientY, moved: false };
  };
  const onPointerMove = (e: React.PointerEvent) => {
    const d = drag.current;
    if (!d) return showTooltip(e);
    const dx = e.clientX - d.x;
    const dy = e.clientY - d.y;
    if (!d.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
    if (!d.moved) {
      container.current?.setPointerCapture(e.pointerId);
      if (tooltip.current) tooltip.current.hidden = true;
    }
    d.moved = true;
    view.current = { ...view.current, x: view.current.x + dx, y: view.current.y + dy };
    d.x = e.clientX;
    d.y = e.clientY;
    apply();
  };
  const onPointerUp = (e: React.PointerEvent) => {
    const d = drag.current;
    drag.current = undefined;
    if (d?.moved) {
      container.current?.releasePointerCapture(e.pointerId);
      return;
    }
    const n = nodeAt(e.clientX, e.clientY);
    if (n) onOpen(n.key);
  };

  const error = state?.input === input ? state.error : undefined;
  return (
    <div className="asset-graph-wrap">
      <div className="asset-graph-controls">
        <button type="button" onClick={() => zoomBy(1.25)} aria-label="Zoom in" disabled={!layout}>
          +
        </button>
        <button type="button" onClick={() => zoomBy(0.8)} aria-label="Zoom out" disabled={!layout}>
          −
        </button>
        <button type="button" onClick={fit} disabled={!layout}>
          Fit
        </button>
      </div>
      <div
        ref={container}
        className="asset-graph"
        data-testid="asset-graph"
        data-nodes={nodes.length}
        data-layout-ms={layout?.ms}
        onPointerDown={onPointerDown}
        onPointerMove={onPointerMove}
        onPointerUp={onPointerUp}
        onPointerCancel={() => (drag.current = undefined)}
        onPointerLeave={() => tooltip.current && (tooltip.current.hidden = true)}
      >
        <div ref={tooltip} className="asset-graph-tooltip" data-testid="graph-tooltip" hidden />
        {error ? (
          <div className="error" role="alert">
            {error.message}
          </div>
        ) : !layout ? (
          <div className="loading">Laying out {nodes.length.toLocaleString("en-US")} assets…</div>
        ) : (
          <svg width="100%" height="100%">
            <g ref={viewport}>
              {base}
              {detailed}
            </g>
          </svg>
        )}
      </div>
    </div>
  );
}
