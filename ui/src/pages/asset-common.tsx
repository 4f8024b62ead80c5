// Small pieces the asset page's sections share.
import { useCallback } from "react";
import { Link, useSearchParams } from "wouter";
import { assetPath } from "../format";

/** The page's URL query: read with get(), changed with set() (replacing the history entry, so Back leaves the page). */
export interface PageParams {
  get(name: string): string | undefined;
  set(changes: Record<string, string | undefined>): void;
}

export function usePageParams(): PageParams {
  const [params, setParams] = useSearchParams();
  const set = useCallback(
    (changes: Record<string, string | undefined>) =>
      setParams(
        (prev) => {
          const next = new URLSearchParams(prev);
          for (const [k, v] of Object.entries(changes)) {
            if (v === undefined || v === "") next.delete(k);
            else next.set(k, v);
          }
          return next;
        },
        { replace: true },
      ),
    [setParams],
  );
  return { get: (name) => params.get(name) ?? undefined, set };
}

/** An asset key as a link to its page. */
export function AssetLink({ assetKey }: { assetKey: string }) {
  return (
    <Link href={assetPath(assetKey)} className="mono">
      {assetKey}
    </Link>
  );
}

/** A run id as a link to its page. */
export function RunLink({ runId }: { runId: string | null | undefined }) {
  if (!runId) return <span className="muted">–</span>;
  return (
    <Link href={`/runs/${runId}`} className="mono">
      {runId.length > 12 ? runId.slice(0, 8) : runId}
    </Link>
  );
}

/** A JSON value in one line (objects as compact JSON). */
export function jsonText(value: unknown): string {
  if (value === null || value === undefined) return "–";
  if (typeof value === "string") return value;
  return JSON.stringify(value);
}
