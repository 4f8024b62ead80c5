// The backfill launch dialog: assets, a partition range and pacing, with a live preview (backfillPreview: the same
// checks as launchBackfill, nothing stored) of how many partitions and runs it would create. An invalid selection
// shows the API's explanation and keeps the launch button disabled.
import { useEffect, useMemo, useState } from "react";
import { useLocation } from "wouter";
import { gql, GraphQLRequestError, useMutation, useQuery } from "../api";
import { formatCount } from "../format";
import { ErrorView } from "./QueryStates";
import "./BackfillDialog.css";

interface AssetOption {
  key: string;
  kind: string;
  group: string | null;
  partitionsDescription: string | null;
  viewerCan: { operate: boolean } | null;
}

interface Preview {
  partitions: number;
  runs: number;
  perAsset: { assetKey: string; partitions: number; firstKey: string; lastKey: string }[];
  maxPartitionsPerRun: number;
  maxConcurrentRuns: number;
}

const ASSETS = `{ assets { key kind group partitionsDescription viewerCan { operate } } }`;
const PREVIEW = `query Preview($input: LaunchBackfillInput!) {
  backfillPreview(input: $input) { partitions runs maxPartitionsPerRun maxConcurrentRuns perAsset { assetKey partitions firstKey lastKey } }
}`;
const LAUNCH = `mutation Launch($input: LaunchBackfillInput!) { launchBackfill(input: $input) { id } }`;

type PreviewState =
  | { kind: "idle" }
  | { kind: "loading"; key: string }
  | { kind: "ok"; key: string; preview: Preview }
  | { kind: "error"; key: string; error: Error };

export interface BackfillDialogProps {
  /** Assets selected when it opens (e.g. from an asset page). */
  presetAssets?: readonly string[];
  presetFrom?: string;
  presetTo?: string;
  onClose: () => void;
}

/** Whole numbers from a text field: undefined when empty, NaN when not a whole number (the API explains). */
function intOrUndefined(text: string): number | undefined {
  if (text.trim() === "") return undefined;
  return /^-?\d+$/.test(text.trim()) ? Number(text.trim()) : Number.NaN;
}

export function BackfillDialog({ presetAssets = [], presetFrom, presetTo, onClose }: BackfillDialogProps) {
  const [, navigate] = useLocation();
  const assets = useQuery<{ assets: AssetOption[] }>(ASSETS);
  const [selected, setSelected] = useState<string[]>([...presetAssets]);
  const [search, setSearch] = useState("");
  const [mode, setMode] = useState<"range" | "all">("range");
  const [from, setFrom] = useState(presetFrom ?? "");
  const [to, setTo] = useState(presetTo ?? "");
  const [perRun, setPerRun] = useState("1");
  const [concurrent, setConcurrent] = useState("1");
  const [priority, setPriority] = useState("");
  const [includeUpstream, setIncludeUpstream] = useState(false);
  const launch = useMutation<{ launchBackfill: { id: string } }>(LAUNCH);

  const input = useMemo(() => {
    const maxPartitionsPerRun = intOrUndefined(perRun);
    const maxConcurrentRuns = intOrUndefined(concurrent);
    const prio = intOrUndefined(priority);
    return {
      assetKeys: selected,
      ...(mode === "all" ? { allPartitions: true } : {}),
      ...(mode === "range" && from.trim() ? { from: from.trim() } : {}),
      ...(mode === "range" && to.trim() ? { to: to.trim() } : {}),
      ...(maxPartitionsPerRun !== undefined ? { maxPartitionsPerRun } : {}),
      ...(maxConcurrentRuns !== undefined ? { maxConcurrentRuns } : {}),
      ...(prio !== undefined ? { priority: prio } : {}),
      ...(includeUpstream ? { includeUpstream: true } : {}),
    };
  }, [selected, mode, from, to, perRun, concurrent, priority, includeUpstream]);
  const inputKey = JSON.stringify(input);
  const numbersBad = [input.maxPartitionsPerRun, input.maxConcurrentRuns, input.priority].some((n) => n !== undefined && Number.isNaN(n));

  // The preview follows the form, 250 ms after the last change; an older answer never replaces a newer one.
  const [preview, setPreview] = useState<PreviewState>({ kind: "idle" });
  useEffect(() => {
    if (selected.length === 0 || numbersBad) {
      setPreview({ kind: "idle" });
      return;
    }
    const abort = new AbortController();
    setPreview({ kind: "loading", key: inputKey });
    const timer = setTimeout(() => {
      gql<{ backfillPreview: Preview }>(PREVIEW, { input: JSON.parse(inputKey) as Record<string, unknown> }, abort.signal).then(
        (data) => setPreview({ kind: "ok", key: inputKey, preview: data.backfillPreview }),
        (error: Error) => {
          if (!abort.signal.aborted) setPreview({ kind: "error", key: inputKey, error });
        },
      );
    }, 250);
    return () => {
      clearTimeout(timer);
      abort.abort();
    };
  }, [inputKey, selected.length, numbersBad]);

  const ready = preview.kind === "ok" && preview.key === inputKey && !launch.running;
  const submit = async () => {
    if (!ready) return;
    const result = await launch.run({ input });
    if (result) navigate(`/backfills/${result.launchBackfill.id}`);
  };

  const options = useMemo(() => {
    const q = search.trim().toLowerCase();
    // Only what the caller may backfill: operator of a team that owns the asset.
    const all = (assets.data?.assets ?? []).filter((a) => a.kind !== "source" && a.viewerCan?.operate === true);
    return q ? all.filter((a) => a.key.toLowerCase().includes(q) || (a.group ?? "").toLowerCase().includes(q)) : all;
  }, [assets.data, search]);
  const byKey = useMemo(() => new Map((assets.data?.assets ?? []).map((a) => [a.key, a])), [assets.data]);
  const toggle = (key: string) => setSelected((s) => (s.includes(key) ? s.filter((k) => k !== key) : [...s, key]));

  return (
    <div className="dialog-backdrop" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div className="dialog backfill-dialog" role="dialog" aria-label="Launch a backfill" data-testid="backfill-dialog">
        <h2>Launch a backfill</h2>
        <section>
          <div className="bf-label">Assets</div>
          <div className="bf-chips" data-testid="bf-selected">
            {selected.length === 0 ? <span className="muted">none selected</span> : null}
            {selected.map((k) => (
              <span key={k} className="bf-chip">
                {k}
                <button type="button" aria-label={`remove ${k}`} onClick={() => toggle(k)}>
                  ×
                </button>
              </span>
            ))}
          </div>
          <input
            className="bf-search"
            placeholder="search assets…"
            value={search}
            onChange={(e) => setSearch(e.target.value)}
            data-testid="bf-search"
          />
          {assets.error ? <ErrorView error={assets.error} /> : null}
          <div className="bf-options" data-testid="bf-options">
            {assets.loading && !assets.data ? <span className="muted">Loading assets…</span> : null}
            {options.slice(0, 300).map((a) => (
              <label key={a.key} className="bf-option">
                <input
                  type="checkbox"
                  checked={selected.includes(a.key)}
                  onChange={() => toggle(a.key)}
                  data-testid={`bf-asset-${a.key}`}
                />
                <span className="mono">{a.key}</span>
                <span className="muted">{a.partitionsDescription ?? "unpartitioned"}</span>
              </label>
            ))}
            {options.length > 300 ? <span className="muted">{options.length - 300} more: narrow the search</span> : null}
            {assets.data && options.length === 0 ? <span className="muted">No asset matches.</span> : null}
          </div>
        </section>

        <section>
          <div className="bf-label">Partitions</div>
          <div className="toolbar">
            <label>
              <input type="radio" name="bf-mode" checked={mode === "range"} onChange={() => setMode("range")} data-testid="bf-mode-range" />{" "}
              a range
            </label>
            <label>
              <input type="radio" name="bf-mode" checked={mode === "all"} onChange={() => setMode("all")} data-testid="bf-mode-all" /> every
              existing partition
            </label>
          </div>
          {mode === "range" ? (
            <div className="toolbar">
              <label>
                from{" "}
                <input
                  value={from}
                  onChange={(e) => setFrom(e.target.value)}
                  placeholder="first key (empty: the first)"
                  data-testid="bf-from"
                />
              </label>
              <label>
                to{" "}
                <input value={to} onChange={(e) => setTo(e.target.value)} placeholder="last key (empty: the latest)" data-testid="bf-to" />
              </label>
            </div>
          ) : null}
          {selected.length > 0 ? (
            <div className="muted bf-defs">
              {[...new Set(selected.map((k) => byKey.get(k)?.partitionsDescription).filter((d): d is string => !!d))].join("; ")}
            </div>
          ) : null}
        </section>

        <section className="toolbar bf-numbers">
          <label>
            partitions per run <input value={perRun} onChange={(e) => setPerRun(e.target.value)} size={5} data-testid="bf-per-run" />
          </label>
          <label>
            runs at once <input value={concurrent} onChange={(e) => setConcurrent(e.target.value)} size={4} data-testid="bf-concurrent" />
          </label>
          <label>
            priority{" "}
            <input value={priority} onChange={(e) => setPriority(e.target.value)} size={4} placeholder="-10" data-testid="bf-priority" />
          </label>
          <label>
            <input
              type="checkbox"
              checked={includeUpstream}
              onChange={(e) => setIncludeUpstream(e.target.checked)}
              data-testid="bf-upstream"
            />{" "}
            include missing upstream
          </label>
        </section>

        <section
          className="bf-preview"
          data-testid="bf-preview"
          data-state={preview.kind !== "idle" && preview.key !== inputKey ? "loading" : preview.kind}
        >
          {numbersBad ? <div className="error">Partitions per run, runs at once and priority must be whole numbers.</div> : null}
          {preview.kind === "idle" && !numbersBad ? <span className="muted">Choose at least one asset.</span> : null}
          {preview.kind === "loading" ? <span className="muted">Checking…</span> : null}
          {preview.kind === "error" ? <PreviewError error={preview.error} /> : null}
          {preview.kind === "ok" ? <PreviewSummary preview={preview.preview} /> : null}
        </section>

        {launch.error ? <ErrorView error={launch.error} title="The backfill was not launched" /> : null}
        <div className="toolbar bf-actions">
          <button type="button" onClick={onClose}>
            Close
          </button>
          <button type="button" className="primary" disabled={!ready} onClick={() => void submit()} data-testid="bf-launch">
            {launch.running ? "Launching…" : preview.kind === "ok" ? `Launch ${formatCount(preview.preview.runs)} runs` : "Launch"}
          </button>
        </div>
      </div>
    </div>
  );
}

function PreviewSummary({ preview }: { preview: Preview }) {
  return (
    <div>
      <div data-testid="bf-preview-summary">
        <strong data-testid="bf-preview-partitions" data-count={preview.partitions}>
          {formatCount(preview.partitions)}
        </strong>{" "}
        partitions in{" "}
        <strong data-testid="bf-preview-runs" data-count={preview.runs}>
          {formatCount(preview.runs)}
        </strong>{" "}
        runs ({formatCount(preview.maxPartitionsPerRun)} per run, {formatCount(preview.maxConcurrentRuns)} at once)
      </div>
      <table className="grid bf-per-asset">
        <tbody>
          {preview.perAsset.map((a) => (
            <tr key={a.assetKey}>
              <td className="mono">{a.assetKey}</td>
              <td>{formatCount(a.partitions)}</td>
              <td className="mono muted">{a.firstKey === a.lastKey ? a.firstKey || "unpartitioned" : `${a.firstKey} … ${a.lastKey}`}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Why the selection cannot be launched, as the API explains it (the same check launchBackfill makes). */
function PreviewError({ error }: { error: Error }) {
  return (
    <div className="error" role="alert" data-testid="bf-preview-error">
      <strong>This backfill cannot be launched</strong>
      {error instanceof GraphQLRequestError && error.code ? <code className="code">{error.code}</code> : null}
      <div>{error.message}</div>
    </div>
  );
}
