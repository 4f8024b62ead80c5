// Links the asset page's sections show: an asset key to its page, a run id to its run.
import { Link } from "wouter";
import { assetPath } from "../format";

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
