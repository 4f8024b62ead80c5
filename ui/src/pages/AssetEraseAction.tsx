// Erase, for admins, on the asset page: the partitions whose data to erase (the selection, editable), a reason, a
// dry run that says what the request reaches, then the request itself, whose page shows it being carried out.
import { useEffect, useState } from "react";
import { useLocation } from "wouter";
import { useMutation } from "../api";
import { ErrorView } from "../components/QueryStates";
import { formatCount } from "../format";
import { AssetLink } from "./AssetPageLinks";
import "./Erasures.css";

/** The most partitions one request names (the API's limit). */
export const MAX_ERASE_PARTITIONS = 10_000;

const REQUEST = `mutation ($input: RequestErasureInput!) { requestErasure(input: $input) {
  request { id state } assetKey partitionKeys partitionCount outputCount dryRun
  assets { assetKey partitionCount eraseHook pii defined }
} }`;

interface ErasurePlan {
  request: { id: string; state: string } | null;
  assetKey: string;
  partitionKeys: string[];
  partitionCount: number;
  outputCount: number;
  dryRun: boolean;
  assets: { assetKey: string; partitionCount: number; eraseHook: boolean; pii: unknown; defined: boolean }[];
}

/** One key a line; blank lines dropped (keys may hold commas, never line breaks). */
function parseKeys(text: string): string[] {
  return [...new Set(text.split("\n").map((k) => k.trim()))].filter((k) => k !== "");
}

function piiText(pii: unknown): string {
  if (pii === null || pii === undefined || pii === false) return "";
  return Array.isArray(pii) ? pii.join(", ") : "yes";
}

/**
 * "Erase…": `keys` are the selected partitions (or why they cannot be named at once); for an unpartitioned asset
 * there are none. The preview is a dry run of the same request, so what it lists is what the request records.
 */
export function EraseAction({ assetKey, partitioned, keys }: { assetKey: string; partitioned: boolean; keys: readonly string[] | string }) {
  const [, navigate] = useLocation();
  const request = useMutation<{ requestErasure: ErasurePlan | null }>(REQUEST);
  const [open, setOpen] = useState(false);
  const [text, setText] = useState(typeof keys === "string" ? "" : keys.join("\n"));
  const [reason, setReason] = useState("");
  const [preview, setPreview] = useState<{ plan: ErasurePlan; text: string } | undefined>(undefined);
  const partitionKeys = partitioned ? parseKeys(text) : [];
  const tooMany = partitionKeys.length > MAX_ERASE_PARTITIONS;
  const missing = partitioned && partitionKeys.length === 0;
  const current = preview && preview.text === text ? preview.plan : undefined;

  const ask = async () => {
    setPreview(undefined);
    const r = await request.run({ input: { assetKey, partitionKeys, dryRun: true } });
    if (r?.requestErasure) setPreview({ plan: r.requestErasure, text });
  };
  const confirm = async () => {
    const r = await request.run({ input: { assetKey, partitionKeys, ...(reason.trim() ? { reason: reason.trim() } : {}) } });
    const id = r?.requestErasure?.request?.id;
    if (id) navigate(`/erasures/${id}`);
  };
  // Opening asks for the preview of the selection at once, as Wipe… does.
  useEffect(() => {
    if (open && !missing && !tooMany && !preview) void ask();
  }, [open]);

  if (!open) {
    return (
      <div className="erase-action toolbar">
        <button
          type="button"
          onClick={() => setOpen(true)}
          data-testid="erase"
          title="Erase the data of these partitions and of everything derived from them, then re-materialise it, with a proof report"
        >
          Erase…
        </button>
      </div>
    );
  }
  return (
    <div className="erase-form" data-testid="erase-form">
      <div>
        <strong>Erase the data of {partitioned ? "these partitions" : "this asset"} and of everything derived from it.</strong>{" "}
        <span className="muted">
          Stored outputs and logs are deleted, erase hooks are called, then the partitions are materialised again from the cleaned source;
          the request keeps a proof of each step.
        </span>
      </div>
      {partitioned ? (
        <label className="muted">
          Partitions, one a line{typeof keys === "string" ? ` (${keys})` : ""}
          <textarea
            rows={Math.min(8, Math.max(2, partitionKeys.length + 1))}
            value={text}
            onChange={(e) => setText(e.target.value)}
            data-testid="erase-partitions"
            spellCheck={false}
          />
        </label>
      ) : null}
      <div className="toolbar">
        <input
          type="text"
          placeholder="reason (kept with the request and in the audit trail)"
          value={reason}
          maxLength={1000}
          onChange={(e) => setReason(e.target.value)}
          data-testid="erase-reason"
          style={{ minWidth: 320 }}
        />
        <button
          type="button"
          disabled={request.running || missing || tooMany}
          onClick={() => void ask()}
          data-testid="erase-preview-button"
        >
          Preview
        </button>
        <button
          type="button"
          className="danger"
          disabled={request.running || !current}
          onClick={() => void confirm()}
          data-testid="erase-confirm"
          title={current ? undefined : "Preview the request first"}
        >
          Erase
        </button>
        <button
          type="button"
          className="link-button"
          onClick={() => {
            setOpen(false);
            setPreview(undefined);
            request.reset();
          }}
        >
          cancel
        </button>
      </div>
      {missing ? <div className="muted">Name at least one partition.</div> : null}
      {tooMany ? (
        <div className="muted">
          {formatCount(partitionKeys.length)} partitions: one request names at most {formatCount(MAX_ERASE_PARTITIONS)}.
        </div>
      ) : null}
      {current ? <ErasePreview plan={current} /> : preview ? <div className="muted">The partitions changed: preview again.</div> : null}
      {request.error ? <ErrorView error={request.error} /> : null}
    </div>
  );
}

function ErasePreview({ plan }: { plan: ErasurePlan }) {
  const hooks = plan.assets.filter((a) => a.eraseHook);
  return (
    <div data-testid="erase-preview" data-partitions={plan.partitionCount} data-assets={plan.assets.length} data-hooks={hooks.length}>
      <div>
        Erases <strong>{formatCount(plan.partitionCount)}</strong> partition{plan.partitionCount === 1 ? "" : "s"} of{" "}
        <strong>{formatCount(plan.assets.length)}</strong> asset{plan.assets.length === 1 ? "" : "s"}, deleting{" "}
        {formatCount(plan.outputCount)} stored output{plan.outputCount === 1 ? "" : "s"} and their logs
        {hooks.length > 0 ? `; calls the erase hook${hooks.length === 1 ? "" : "s"} of ${hooks.map((a) => a.assetKey).join(", ")}` : ""}.
      </div>
      <table className="grid" data-testid="erase-preview-assets">
        <thead>
          <tr>
            <th>Asset</th>
            <th>Partitions</th>
            <th>Erase hook</th>
            <th>Personal data</th>
          </tr>
        </thead>
        <tbody>
          {plan.assets.map((a) => (
            <tr
              key={a.assetKey}
              data-testid="erase-preview-asset"
              data-asset={a.assetKey}
              data-count={a.partitionCount}
              data-hook={a.eraseHook}
            >
              <td>
                <AssetLink assetKey={a.assetKey} />
                {a.defined ? null : <span className="muted"> (no longer defined: not re-materialised)</span>}
              </td>
              <td>{formatCount(a.partitionCount)}</td>
              <td>{a.eraseHook ? "called" : <span className="muted">none</span>}</td>
              <td>{piiText(a.pii) || <span className="muted">not marked</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The keys of partitions `first`…`last` (by index) for the form, or why there are too many to name. */
export function eraseKeys(
  keyAt: (index: number) => string,
  indices: readonly number[] | { first: number; last: number },
): readonly string[] | string {
  const count = "first" in indices ? indices.last - indices.first + 1 : indices.length;
  if (count > MAX_ERASE_PARTITIONS) return `${formatCount(count)} selected: an erasure names at most ${formatCount(MAX_ERASE_PARTITIONS)}`;
  if (!("first" in indices)) return indices.map(keyAt);
  return Array.from({ length: count }, (_, i) => keyAt(indices.first + i));
}
