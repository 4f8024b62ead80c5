import { stateColor } from "../status";

/** A state as a coloured pill. */
export function StateBadge({ state }: { state: string | null | undefined }) {
  const s = state ?? "unknown";
  return (
    <span className="badge" data-state={s} style={{ background: stateColor(s) }}>
      {s.toLowerCase().replace(/_/g, " ")}
    </span>
  );
}
