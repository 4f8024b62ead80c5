// Partition status of the asset page: the bar (or, for a multi-partitioned asset, a matrix of two dimensions),
// its legend, and materialise / clear of the selected partitions.
import { useEffect, useMemo, useState } from "react";
import { Link } from "wouter";
import { useMutation, type QueryState } from "../api";
import {
  indexRanges,
  PartitionBar,
  StatusLegend,
  type IndexSelection,
  type RangeIndex,
  type StatusRange,
} from "../components/PartitionBar";
import { PartitionMatrix, selectedIndices, type CellSelection } from "../components/PartitionMatrix";
import { ErrorView, Loading } from "../components/QueryStates";
import { formatCount } from "../format";
import { PARTITION_COLORS } from "../status";
import type { PageParams } from "./asset-page-params";
import { loadPartitionIndex, type PartitionIndex } from "./asset-partition-index";
import type { AssetDefinition } from "./AssetDefinitionCard";
import { EraseAction, eraseKeys } from "./AssetEraseAction";

export interface StatusData {
  asset: {
    partitionStatus: {
      counts: {
        missing: number;
        materializing: number;
        materialized: number;
        failed: number;
        stale: number;
        timedOut: number;
        erased: number;
        total: number;
      };
      ranges: StatusRange[];
    };
  } | null;
}

/** Up to this many partitions are materialised by one run; more by a backfill. */
export const RUN_LIMIT = 25;
/** A backfill of explicit keys (a matrix selection that is no single range) lists at most this many. */
const KEY_LIST_LIMIT = 10_000;

/** The ranges indexed once per answer. */
export function useRangeIndex(status: QueryState<StatusData>): RangeIndex | undefined {
  const ranges = status.data?.asset?.partitionStatus.ranges;
  return useMemo(() => (ranges ? indexRanges(ranges) : undefined), [ranges]);
}

/** Index ↔ key of the existing partitions, loaded once per definition and partition count. */
function usePartitionIndex(
  asset: AssetDefinition,
  total: number | undefined,
): { index: PartitionIndex | undefined; error: Error | undefined } {
  const [state, setState] = useState<{ index: PartitionIndex | undefined; error: Error | undefined; key: string }>({
    index: undefined,
    error: undefined,
    key: "",
  });
  const spec = asset.partitionsDefinition;
  const key = JSON.stringify([asset.key, spec, total]);
  useEffect(() => {
    if (spec == null || total === undefined) return;
    const abort = new AbortController();
    const load = () =>
      loadPartitionIndex(asset.key, spec as Parameters<typeof loadPartitionIndex>[1], total, abort.signal).then(
        (index) => !abort.signal.aborted && setState({ index, error: undefined, key }),
        (error: Error) => !abort.signal.aborted && setState({ index: undefined, error, key }),
      );
    // The bar draws from the ranges alone; the index (a lazily loaded module, evaluated on the main thread) only
    // names keys on hover and selection. Loaded once the browser is idle, so it never holds up the first drawing.
    // The matrix of a multi-partitioned asset needs its dimensions to draw at all: loaded at once.
    if ((spec as { kind?: string }).kind === "multi" || typeof window.requestIdleCallback !== "function") {
      void load();
      return () => abort.abort();
    }
    const idle = window.requestIdleCallback(() => void load(), { timeout: 2_000 });
    return () => {
      window.cancelIdleCallback(idle);
      abort.abort();
    };
  }, [key]);
  return state.key === key ? state : { index: undefined, error: undefined };
}

/** What a selection materialises or clears, as the API's inputs. */
interface Target {
  readonly count: number;
  readonly label: string;
  /** A run for a few partitions of one range (or the unpartitioned asset). */
  readonly run: Record<string, unknown> | undefined;
  readonly backfill: Record<string, unknown> | undefined;
  /** clearPartitions input, or why the selection cannot be cleared at once. */
  readonly clear: Record<string, unknown> | string;
  /** wipePartitions input, or why the selection cannot be wiped at once. */
  readonly wipe: Record<string, unknown> | string;
  /** The partition keys an erasure request names, or why they cannot be named at once. */
  readonly erase: readonly string[] | string;
}

/** Why a matrix block cannot be cleared or wiped at once: those take one partition or one range. */
function notOneRange(action: string, lastAxis: string): string {
  return (
    `${action} takes one partition or one range of consecutive partitions; this selection is neither` +
    ` (consecutive partitions run along ${lastAxis}: select all its keys, or one cell).`
  );
}

function rangeTarget(assetKey: string, from: string, to: string, count: number, erase: Target["erase"]): Target {
  const one = count === 1;
  const keys = one ? { partition: from } : { from, to };
  return {
    count,
    label: one ? from : `${from} … ${to}`,
    run: count <= RUN_LIMIT ? { assetKeys: [assetKey], ...keys } : undefined,
    backfill: count > RUN_LIMIT ? { assetKeys: [assetKey], from, to } : undefined,
    clear: { assetKey, ...keys },
    wipe: { assetKey, ...(one ? { partitions: [from] } : { from, to }) },
    erase,
  };
}

export function StatusSection({
  asset,
  params,
  status,
  ranges,
}: {
  asset: AssetDefinition;
  params: PageParams;
  status: QueryState<StatusData>;
  ranges: RangeIndex | undefined;
}) {
  const summary = status.data?.asset?.partitionStatus;
  const partitioned = asset.partitionsDefinition != null;
  const { index, error: indexError } = usePartitionIndex(asset, partitioned ? ranges?.total : undefined);
  const axes = index?.axes;
  // A drag that ends before the key index has loaded (it loads after the bar is drawn) is applied once it has.
  const [pendingBar, setPendingBar] = useState<IndexSelection | undefined>(undefined);
  useEffect(() => {
    if (!index || !pendingBar) return;
    putBarSelection(params, index, pendingBar);
    setPendingBar(undefined);
  }, [index, pendingBar]);
  const view = axes && params.get("view") !== "bar" ? "matrix" : "bar";
  const rowAxis = axisNumber(axes, params.get("rows"), 1);
  const colAxis = axisNumber(axes, params.get("cols"), rowAxis === 0 ? 1 : 0);

  // The selection, kept in the URL as keys (stable across definition changes that add partitions).
  const barSelection = useMemo((): IndexSelection | undefined => {
    const from = params.get("from");
    const to = params.get("to") ?? from;
    if (!index || from === undefined || to === undefined) return undefined;
    const a = index.indexOf(from);
    const b = index.indexOf(to);
    return a === undefined || b === undefined ? undefined : { from: Math.min(a, b), to: Math.max(a, b) };
  }, [index, params.get("from"), params.get("to")]);
  const cellSelection = useMemo((): CellSelection | undefined => {
    if (!axes) return undefined;
    const r = axes[rowAxis]!;
    const c = axes[colAxis]!;
    const digits = [
      r.indexOf(params.get("rfrom") ?? ""),
      r.indexOf(params.get("rto") ?? ""),
      c.indexOf(params.get("cfrom") ?? ""),
      c.indexOf(params.get("cto") ?? ""),
    ];
    if (digits.some((d) => d === undefined)) return undefined;
    const [r0, r1, c0, c1] = digits as number[];
    return { rows: [Math.min(r0!, r1!), Math.max(r0!, r1!)], cols: [Math.min(c0!, c1!), Math.max(c0!, c1!)] };
  }, [axes, rowAxis, colAxis, params.get("rfrom"), params.get("rto"), params.get("cfrom"), params.get("cto")]);

  const target = useMemo((): Target | undefined => {
    if (!partitioned)
      return {
        count: 1,
        label: "the asset",
        run: { assetKeys: [asset.key] },
        backfill: undefined,
        clear: { assetKey: asset.key },
        wipe: { assetKey: asset.key },
        erase: [],
      };
    if (!index || !ranges) return undefined;
    if (view === "bar" && barSelection) {
      return rangeTarget(
        asset.key,
        index.keyAt(barSelection.from),
        index.keyAt(barSelection.to),
        barSelection.to - barSelection.from + 1,
        eraseKeys(index.keyAt, { first: barSelection.from, last: barSelection.to }),
      );
    }
    if (view === "matrix" && axes && cellSelection) {
      const indices = selectedIndices(axes, rowAxis, colAxis, cellSelection, ranges.total);
      if (indices.length === 0) return undefined;
      const first = indices[0]!;
      const last = indices[indices.length - 1]!;
      if (last - first + 1 === indices.length)
        return rangeTarget(asset.key, index.keyAt(first), index.keyAt(last), indices.length, eraseKeys(index.keyAt, indices));
      const count = indices.length;
      const tooMany = count > KEY_LIST_LIMIT;
      return {
        count,
        label: `${axes[rowAxis]!.name} ${axes[rowAxis]!.keyAt(cellSelection.rows[0])}…${axes[rowAxis]!.keyAt(cellSelection.rows[1])} × ${axes[colAxis]!.name} ${axes[colAxis]!.keyAt(cellSelection.cols[0])}…${axes[colAxis]!.keyAt(cellSelection.cols[1])}`,
        run: undefined,
        backfill: tooMany ? undefined : { assetKeys: [asset.key], partitions: indices.map((i) => index.keyAt(i)) },
        clear: notOneRange("Clear", axes[axes.length - 1]!.name),
        wipe: notOneRange("Wipe", axes[axes.length - 1]!.name),
        erase: eraseKeys(index.keyAt, indices),
      };
    }
    return undefined;
  }, [partitioned, index, ranges, view, barSelection, axes, cellSelection, rowAxis, colAxis, asset.key]);

  if (status.error && !summary) return <ErrorView error={status.error} title="Could not load the partition status" />;
  if (!summary || !ranges) return <Loading what="the partition status" />;

  const pickStatus = (s: string) => params.set({ tab: "partitions", status: s });
  const selectBar = (sel: IndexSelection) => (index ? putBarSelection(params, index, sel) : setPendingBar(sel));
  const selectCells = (sel: CellSelection) => {
    if (!axes || !index) return;
    const r = axes[rowAxis]!;
    const c = axes[colAxis]!;
    const single = sel.rows[0] === sel.rows[1] && sel.cols[0] === sel.cols[1] && axes.length === 2;
    let partition: string | undefined;
    if (single) {
      const ids = selectedIndices(axes, rowAxis, colAxis, sel, ranges.total);
      if (ids.length === 1) partition = index.keyAt(ids[0]!);
    }
    params.set({
      rfrom: r.keyAt(sel.rows[0]),
      rto: r.keyAt(sel.rows[1]),
      cfrom: c.keyAt(sel.cols[0]),
      cto: c.keyAt(sel.cols[1]),
      ...(partition ? { partition } : {}),
    });
  };

  return (
    <div className="card asset-status" data-testid="asset-status">
      <div className="asset-status-head">
        <h2>Partition status</h2>
        {axes ? (
          <div className="toolbar">
            <select
              value={view}
              onChange={(e) => params.set({ view: e.target.value === "bar" ? "bar" : undefined })}
              data-testid="status-view"
            >
              <option value="matrix">matrix</option>
              <option value="bar">bar</option>
            </select>
            {view === "matrix" ? (
              <>
                <AxisSelect label="rows" param="rows" axes={axes} value={axes[rowAxis]!.name} params={params} />
                <AxisSelect label="columns" param="cols" axes={axes} value={axes[colAxis]!.name} params={params} />
              </>
            ) : null}
          </div>
        ) : null}
      </div>
      <StatusLegend counts={summary.counts} active={params.get("status")} onPick={pickStatus} />
      {status.error ? <ErrorView error={status.error} title="Could not refresh the partition status" /> : null}
      {indexError ? <ErrorView error={indexError} title="Could not read the partition keys" /> : null}
      {!partitioned ? (
        <div className="muted">
          Unpartitioned:{" "}
          {summary.ranges[0] ? (
            <span className="badge" style={{ background: PARTITION_COLORS[summary.ranges[0].status] }}>
              {summary.ranges[0].status.toLowerCase()}
            </span>
          ) : null}
        </div>
      ) : view === "matrix" && axes && rowAxis !== colAxis ? (
        <PartitionMatrix ranges={ranges} axes={axes} rowAxis={rowAxis} colAxis={colAxis} selection={cellSelection} onSelect={selectCells} />
      ) : view === "matrix" && axes ? (
        <div className="muted">Choose two different dimensions.</div>
      ) : (
        <PartitionBar ranges={ranges} selection={barSelection} onSelect={selectBar} keyAt={index?.keyAt} />
      )}
      {partitioned && ranges.total > 0 ? (
        <div className="muted hint">Drag across the {view} to select partitions; click a status to list its partitions.</div>
      ) : null}
      {target ? (
        <SelectionActions
          key={JSON.stringify([target.label, target.count])}
          assetKey={asset.key}
          target={target}
          partitioned={partitioned}
          canOperate={asset.viewerCan?.operate === true}
          canAdminister={asset.viewerCan?.administer === true}
          onDone={status.reload}
          onDismiss={() =>
            params.set({ from: undefined, to: undefined, rfrom: undefined, rto: undefined, cfrom: undefined, cto: undefined })
          }
        />
      ) : null}
    </div>
  );
}

/** Which dimension the matrix draws as rows (or columns); changing it drops the cell selection. */
function AxisSelect({
  label,
  param,
  axes,
  value,
  params,
}: {
  label: string;
  param: "rows" | "cols";
  axes: readonly { name: string }[];
  value: string;
  params: PageParams;
}) {
  return (
    <label>
      {label}{" "}
      <select
        value={value}
        onChange={(e) => params.set({ [param]: e.target.value, rfrom: undefined, rto: undefined, cfrom: undefined, cto: undefined })}
        data-testid={`matrix-${param}`}
      >
        {axes.map((a) => (
          <option key={a.name} value={a.name}>
            {a.name}
          </option>
        ))}
      </select>
    </label>
  );
}

/** Puts a bar selection in the URL as keys (stable across definition changes that add partitions). */
function putBarSelection(params: PageParams, index: PartitionIndex, sel: IndexSelection): void {
  const from = index.keyAt(sel.from);
  const to = index.keyAt(sel.to);
  params.set({ from, to: sel.to === sel.from ? undefined : to, ...(sel.to === sel.from ? { partition: from } : {}) });
}

function axisNumber(axes: readonly { name: string }[] | undefined, name: string | undefined, fallback: number): number {
  if (!axes) return 0;
  const i = axes.findIndex((a) => a.name === name);
  return i >= 0 ? i : Math.min(fallback, axes.length - 1);
}

const LAUNCH_RUN = `mutation($input: LaunchRunInput!) { launchRun(input: $input) { id status } }`;
const LAUNCH_BACKFILL = `mutation($input: LaunchBackfillInput!) { launchBackfill(input: $input) { id status requested chunks } }`;
const CLEAR = `mutation($input: ClearPartitionsInput!) { clearPartitions(input: $input) { id status } }`;

function SelectionActions({
  assetKey,
  target,
  partitioned,
  canOperate,
  canAdminister,
  onDone,
  onDismiss,
}: {
  assetKey: string;
  target: Target;
  partitioned: boolean;
  /** The caller is an operator of the asset's team: materialise and clear are offered. */
  canOperate: boolean;
  /** The caller is an admin of the asset's team: wipe and erase are offered too. */
  canAdminister: boolean;
  onDone: () => void;
  onDismiss: () => void;
}) {
  const launchRun = useMutation<{ launchRun: { id: string; status: string } | null }>(LAUNCH_RUN);
  const launchBackfill = useMutation<{ launchBackfill: { id: string; status: string; requested: number; chunks: number } | null }>(
    LAUNCH_BACKFILL,
  );
  const clear = useMutation<{ clearPartitions: { id: string; status: string } | null }>(CLEAR);
  const [downstream, setDownstream] = useState(false);
  const [perRun, setPerRun] = useState(target.count > 100 ? 25 : 1);
  const [created, setCreated] = useState<{ kind: "run" | "backfill"; id: string; what: string } | undefined>(undefined);
  const busy = launchRun.running || launchBackfill.running || clear.running;
  const error = launchRun.error ?? launchBackfill.error ?? clear.error;

  const materialise = async () => {
    setCreated(undefined);
    if (target.run) {
      const r = await launchRun.run({ input: target.run });
      if (r?.launchRun) setCreated({ kind: "run", id: r.launchRun.id, what: "Run" });
    } else if (target.backfill) {
      const r = await launchBackfill.run({ input: { ...target.backfill, maxPartitionsPerRun: perRun } });
      if (r?.launchBackfill)
        setCreated({
          kind: "backfill",
          id: r.launchBackfill.id,
          what: `Backfill of ${formatCount(r.launchBackfill.requested)} partitions`,
        });
    }
    onDone();
  };
  const clearNow = async () => {
    if (typeof target.clear === "string") return;
    setCreated(undefined);
    const r = await clear.run({ input: { ...target.clear, downstream } });
    if (r?.clearPartitions) setCreated({ kind: "run", id: r.clearPartitions.id, what: "Rerun" });
    onDone();
  };

  return (
    <div className="selection-actions" data-testid="selection-actions">
      <div>
        <strong data-testid="selection-count">
          {partitioned ? `${formatCount(target.count)} partition${target.count === 1 ? "" : "s"}` : assetKey}
        </strong>{" "}
        {partitioned ? (
          <span className="mono muted" data-testid="selection-label">
            {target.label}
          </span>
        ) : null}
      </div>
      {canOperate ? (
        <div className="toolbar">
          <button
            type="button"
            className="primary"
            disabled={busy || (!target.run && !target.backfill)}
            onClick={() => void materialise()}
            data-testid="materialise"
          >
            Materialise
            {target.backfill
              ? ` (backfill, ${formatCount(Math.ceil(target.count / Math.max(1, perRun)))} runs)`
              : target.run && partitioned
                ? " (one run)"
                : ""}
          </button>
          {target.backfill ? (
            <label className="muted">
              partitions per run{" "}
              <input
                type="number"
                min={1}
                max={1000}
                value={perRun}
                onChange={(e) => setPerRun(Math.max(1, Number(e.target.value) || 1))}
                style={{ width: 70 }}
                data-testid="per-run"
              />
            </label>
          ) : null}
          {!target.run && !target.backfill ? (
            <span className="muted">Too many partitions to list: select fewer than {formatCount(KEY_LIST_LIMIT)}.</span>
          ) : null}
          <button
            type="button"
            disabled={busy || typeof target.clear === "string"}
            onClick={() => void clearNow()}
            data-testid="clear"
            title={typeof target.clear === "string" ? target.clear : "Forget their materialisations and rerun them in one run"}
          >
            Clear
          </button>
          <label className="muted">
            <input type="checkbox" checked={downstream} onChange={(e) => setDownstream(e.target.checked)} data-testid="clear-downstream" />{" "}
            and everything downstream
          </label>
          {partitioned ? (
            <button type="button" className="link-button" onClick={onDismiss}>
              unselect
            </button>
          ) : null}
        </div>
      ) : (
        <div className="toolbar">
          <span className="muted" data-testid="read-only">
            Materialising or clearing this asset needs the operator role on a team that owns it.
          </span>
          {partitioned ? (
            <button type="button" className="link-button" onClick={onDismiss}>
              unselect
            </button>
          ) : null}
        </div>
      )}
      {canOperate && typeof target.clear === "string" ? <div className="muted">{target.clear}</div> : null}
      {canAdminister ? <WipeAction target={target} partitioned={partitioned} onDone={onDone} /> : null}
      {canAdminister ? <EraseAction assetKey={assetKey} partitioned={partitioned} keys={target.erase} /> : null}
      {busy ? <Loading what="" /> : null}
      {error ? <ErrorView error={error} /> : null}
      {created ? (
        <div className="action-result" data-testid="action-result" data-kind={created.kind} data-id={created.id}>
          {created.what} created: <Link href={`/${created.kind === "run" ? "runs" : "backfills"}/${created.id}`}>{created.id}</Link>
        </div>
      ) : null}
    </div>
  );
}

const WIPE = `mutation($input: WipePartitionsInput!) { wipePartitions(input: $input) {
  partitionCount statusesRemoved materializationsRemoved otherEventsRemoved checkResultsRemoved outputsRemoved objectCount
  objectsPending { storageRef error } dryRun } }`;

interface WipeCounts {
  partitionCount: number;
  statusesRemoved: number;
  materializationsRemoved: number;
  otherEventsRemoved: number;
  checkResultsRemoved: number;
  outputsRemoved: number;
  objectCount: number;
  objectsPending: { storageRef: string; error: string }[];
  dryRun: boolean;
}

function describeWipe(w: WipeCounts): string {
  return (
    `${formatCount(w.statusesRemoved)} status${w.statusesRemoved === 1 ? "" : "es"}, ` +
    `${formatCount(w.materializationsRemoved)} materialisation${w.materializationsRemoved === 1 ? "" : "s"}, ` +
    `${formatCount(w.checkResultsRemoved)} check result${w.checkResultsRemoved === 1 ? "" : "s"} and ` +
    `${formatCount(w.outputsRemoved)} output${w.outputsRemoved === 1 ? "" : "s"}` +
    (w.objectCount > 0 ? ` (${formatCount(w.objectCount)} in the object store)` : "")
  );
}

/**
 * Wipe, for admins: a dry run first says what would go, then the wipe itself, with a reason for the audit trail.
 * The partitions become missing; runs keep their history and downstream data stays.
 */
function WipeAction({ target, partitioned, onDone }: { target: Target; partitioned: boolean; onDone: () => void }) {
  const wipe = useMutation<{ wipePartitions: WipeCounts | null }>(WIPE);
  const [preview, setPreview] = useState<WipeCounts | undefined>(undefined);
  const [done, setDone] = useState<WipeCounts | undefined>(undefined);
  const [reason, setReason] = useState("");
  if (typeof target.wipe === "string") return <div className="muted">{target.wipe}</div>;
  const input = target.wipe;
  const what = partitioned ? `${formatCount(target.count)} partition${target.count === 1 ? "" : "s"}` : "the asset";

  const ask = async () => {
    setDone(undefined);
    const r = await wipe.run({ input: { ...input, dryRun: true } });
    if (r?.wipePartitions) setPreview(r.wipePartitions);
  };
  const confirm = async () => {
    const r = await wipe.run({ input: { ...input, ...(reason.trim() ? { reason: reason.trim() } : {}) } });
    if (r?.wipePartitions) {
      setPreview(undefined);
      setDone(r.wipePartitions);
      onDone();
    }
  };

  return (
    <div className="wipe-action" data-testid="wipe-action">
      {preview ? (
        <div className="wipe-preview" data-testid="wipe-preview">
          <div>
            Wipe {what}? This removes {describeWipe(preview)}. They become missing; runs keep their history, and downstream data stays.
          </div>
          <div className="toolbar">
            <input
              type="text"
              placeholder="reason (kept in the audit trail)"
              value={reason}
              maxLength={1000}
              onChange={(e) => setReason(e.target.value)}
              data-testid="wipe-reason"
              style={{ minWidth: 260 }}
            />
            <button type="button" className="danger" disabled={wipe.running} onClick={() => void confirm()} data-testid="wipe-confirm">
              Wipe
            </button>
            <button type="button" className="link-button" onClick={() => setPreview(undefined)}>
              cancel
            </button>
          </div>
        </div>
      ) : (
        <div className="toolbar">
          <button
            type="button"
            disabled={wipe.running}
            onClick={() => void ask()}
            data-testid="wipe"
            title="Remove their statuses, materialisations and outputs, so that they are missing again"
          >
            Wipe…
          </button>
        </div>
      )}
      {wipe.error ? <ErrorView error={wipe.error} /> : null}
      {done ? (
        <div className="action-result" data-testid="wipe-result">
          Wiped {formatCount(done.partitionCount)} partition{done.partitionCount === 1 ? "" : "s"}: removed {describeWipe(done)}.
          {done.objectsPending.length > 0
            ? ` ${formatCount(done.objectsPending.length)} object(s) are deleted later: ${done.objectsPending[0]!.error}`
            : ""}
        </div>
      ) : null}
    </div>
  );
}
