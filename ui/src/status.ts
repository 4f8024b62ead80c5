/** One colour per state, shared by partition bars, the graph, the Gantt chart and badges. */
export const PARTITION_COLORS: Record<string, string> = {
  MATERIALIZED: "#16a34a",
  STALE: "#ca8a04",
  FAILED: "#dc2626",
  MATERIALIZING: "#2563eb",
  MISSING: "#d4d4d8",
  TIMED_OUT: "#9333ea",
};

export const STATE_COLORS: Record<string, string> = {
  success: "#16a34a",
  completed: "#16a34a",
  materialized: "#16a34a",
  fired: "#16a34a",
  failed: "#dc2626",
  upstream_failed: "#f97316",
  timed_out: "#9333ea",
  running: "#2563eb",
  canceling: "#64748b",
  queued: "#60a5fa",
  scheduled: "#93c5fd",
  requested: "#93c5fd",
  pending: "#e4e4e7",
  waiting: "#a78bfa",
  deferred: "#a78bfa",
  up_for_retry: "#facc15",
  up_for_reschedule: "#c4b5fd",
  skipped: "#a1a1aa",
  removed: "#d4d4d8",
  canceled: "#71717a",
};

export function stateColor(state: string | null | undefined): string {
  if (!state) return "#d4d4d8";
  return STATE_COLORS[state] ?? PARTITION_COLORS[state] ?? "#a1a1aa";
}

/** Statuses in which a run or a backfill is still under way (pages refresh while one is). */
export const ACTIVE_RUN_STATUSES: ReadonlySet<string> = new Set(["queued", "running"]);
export const ACTIVE_BACKFILL_STATUSES: ReadonlySet<string> = new Set(["requested", "running", "canceling"]);
