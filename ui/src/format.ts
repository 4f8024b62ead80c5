/** "3 s", "4 min 10 s", "2 h 5 min" */
export function formatDuration(ms: number | null | undefined): string {
  if (ms == null || !Number.isFinite(ms)) return "–";
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  const s = Math.round(ms / 1_000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** A timestamp as local date and time, to the second; "–" when absent. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "–";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
}

/** "5 s ago", "3 min ago", "2 h ago", "4 d ago" */
export function formatAgo(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return "never";
  const ms = now - new Date(iso).getTime();
  if (ms < 0) return `in ${formatDuration(-ms)}`;
  if (ms < 60_000) return `${Math.round(ms / 1_000)} s ago`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min ago`;
  if (ms < 86_400_000) return `${Math.round(ms / 3_600_000)} h ago`;
  return `${Math.round(ms / 86_400_000)} d ago`;
}

export const formatCount = (n: number | null | undefined): string => (n == null ? "–" : n.toLocaleString("en-US"));

/** An asset key as a URL path (its `/` separators kept, each part escaped). */
export const assetPath = (key: string): string => `/assets/${key.split("/").map(encodeURIComponent).join("/")}`;

/** A JSON value in one line (objects as compact JSON). */
export function jsonText(value: unknown): string {
  if (value === null || value === undefined) return "–";
  if (typeof value === "string") return value;
  return JSON.stringify(value);
}

/** A datetime-local input's value ("2026-01-02T03:04") as an ISO instant, or undefined when empty or invalid. */
export function localToIso(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}
