/** One colour per state, shared by partition bars, the graph, the Gantt chart and badges. */
export const PARTITION_COLORS: Record<string, string> = {
  MATERIALIZED: "#16a34a",
  STALE: "#ca8a04",
  FAILED: "#dc2626",
  MATERIALIZING: "#2563eb",
  MISSING: "#d4d4d8",
  TIMED_OUT: "#9333ea",
  /** Slate blue: data removed by an erasure request, waiting to be materialised again. */
  ERASED: "#5b6f8f",
};

export const STATE_COLORS: Record<string, string> = {
  success: "#16a34a",
  completed: "#16a34a",
  materialized: "#16a34a",
  fired: "#16a34a",
  failed: "#dc2626",
  upstream_failed: "#f97316",
  timed_out: "#9333ea",
  erased: "#5b6f8f",
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
  // Erasure requests: planned → erasing → rematerialising → done.
  planned: "#93c5fd",
  erasing: "#5b6f8f",
  rematerialising: "#2563eb",
  done: "#16a34a",
};

export function stateColor(state: string | null | undefined): string {
  if (!state) return "#d4d4d8";
  return STATE_COLORS[state] ?? PARTITION_COLORS[state] ?? "#a1a1aa";
}

/** Statuses in which a run or a backfill is still under way (pages refresh while one is). */
export const ACTIVE_RUN_STATUSES: ReadonlySet<string> = new Set(["queued", "running"]);
export const ACTIVE_BACKFILL_STATUSES: ReadonlySet<string> = new Set(["requested", "running", "canceling"]);
/** Erasure request states in which the reconcilers still work on it (its page refreshes meanwhile). */
export const ACTIVE_ERASURE_STATES: ReadonlySet<string> = new Set(["planned", "erasing", "rematerialising"]);
