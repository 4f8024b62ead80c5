/** The small "check" badge and the check's name, after the asset key of a check's step; nothing for an asset's own step. */
export function CheckTag({ checkName }: { checkName: string | null | undefined }) {
  if (!checkName) return null;
  return (
    <span className="step-check" data-testid="step-check" data-check={checkName}>
      <span className="check-badge">check</span> <span className="mono">{checkName}</span>
    </span>
  );
}

/** A mapped step's index and label, after its asset key; nothing for other steps. */
export function MapTag({ mapIndex, mapLabel }: { mapIndex: number; mapLabel?: string | null | undefined }) {
  if (mapIndex < 0) return null;
  return (
    <span className="muted" data-testid="step-map" data-map-index={mapIndex}>
      {" "}
      #{mapIndex}
      {mapLabel ? <span className="mono"> {mapLabel}</span> : null}
    </span>
  );
}
