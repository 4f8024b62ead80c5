import { PARTITION_COLORS } from "../status";
import { formatCount } from "../format";
import "./HealthBar.css";

/** Partition counts by status, as the API's PartitionStatusCounts. */
export interface StatusCounts {
  readonly total: number | null;
  readonly materialized: number | null;
  readonly stale: number | null;
  readonly failed: number | null;
  readonly materializing: number | null;
  readonly missing: number | null;
  readonly timedOut: number | null;
  readonly erased: number | null;
}

/** Order of the segments, worst last so that failures stand out at the right end. */
const SEGMENTS: readonly { field: keyof Omit<StatusCounts, "total">; status: string; label: string }[] = [
  { field: "materialized", status: "MATERIALIZED", label: "materialized" },
  { field: "stale", status: "STALE", label: "stale" },
  { field: "materializing", status: "MATERIALIZING", label: "materializing" },
  { field: "missing", status: "MISSING", label: "missing" },
  { field: "erased", status: "ERASED", label: "erased" },
  { field: "timedOut", status: "TIMED_OUT", label: "timed out" },
  { field: "failed", status: "FAILED", label: "failed" },
];

/** "1,200 materialized · 3 failed · …" (only the statuses present). */
export function countsSummary(counts: StatusCounts): string {
  const parts = SEGMENTS.filter((s) => (counts[s.field] ?? 0) > 0).map((s) => `${formatCount(counts[s.field])} ${s.label}`);
  return `${formatCount(counts.total)} partition${counts.total === 1 ? "" : "s"}${parts.length ? `: ${parts.join(" · ")}` : ""}`;
}

/**
 * A stacked bar of an asset's partitions by status, each segment as wide as its share; the tooltip lists the
 * counts. A segment keeps at least 2 px so that a single failed partition among 100 000 stays visible.
 */
export function HealthBar({ counts, width = 160 }: { counts: StatusCounts | null | undefined; width?: number }) {
  const total = counts?.total ?? 0;
  if (!counts || total === 0) {
    return (
      <span className="health-bar empty" style={{ width }} title="no partitions exist yet" data-testid="health-bar">
        <span className="muted">no partitions</span>
      </span>
    );
  }
  return (
    <span className="health-bar" style={{ width }} title={countsSummary(counts)} data-testid="health-bar" data-total={total}>
      {SEGMENTS.map((s) => {
        const n = counts[s.field] ?? 0;
        if (n === 0) return null;
        return (
          <span
            key={s.field}
            data-status={s.status}
            data-count={n}
            style={{ flexGrow: n, minWidth: 2, background: PARTITION_COLORS[s.status] }}
          />
        );
      })}
    </span>
  );
}
