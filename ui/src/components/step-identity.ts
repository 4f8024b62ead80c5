/** What names a step: its asset, partition and map index, and the check it runs (null or absent for the asset's own step). */
export interface StepIdentity {
  assetKey: string;
  partitionKey: string;
  mapIndex: number;
  checkName?: string | null;
  /** A mapped step's readable label. */
  mapLabel?: string | null;
}

/** A step's name as plain text ("shop/orders · check not_empty", "feeds/parsed #3 b.csv"), for tooltips and titles. */
export function stepLabel(step: StepIdentity): string {
  if (step.checkName) return `${step.assetKey} · check ${step.checkName}`;
  if (step.mapIndex >= 0) return `${step.assetKey} #${step.mapIndex}${step.mapLabel ? ` ${step.mapLabel}` : ""}`;
  return step.assetKey;
}

/**
 * Steps in the given order, except that the mapped steps and check steps of an (asset, partition) follow that
 * asset's step (mapped steps first, by index; then checks in their own relative order), so the rows of one
 * partition read together. A step whose asset step is not in the list keeps its place.
 */
export function checksAfterTheirAsset<S extends StepIdentity>(steps: readonly S[]): S[] {
  const key = (s: S) => `${s.assetKey}\u0000${s.partitionKey}`;
  const follows = (s: S) => Boolean(s.checkName) || s.mapIndex >= 0;
  const ownerOf = new Map<string, S>();
  for (const s of steps) if (!follows(s)) ownerOf.set(key(s), s);
  const followersOf = new Map<S, S[]>();
  for (const s of steps) {
    const owner = follows(s) ? ownerOf.get(key(s)) : undefined;
    if (!owner) continue;
    const list = followersOf.get(owner);
    if (list) list.push(s);
    else followersOf.set(owner, [s]);
  }
  const out: S[] = [];
  for (const s of steps) {
    if (follows(s) && ownerOf.has(key(s))) continue;
    out.push(s);
    const followers = followersOf.get(s);
    if (!followers) continue;
    out.push(...followers.filter((f) => !f.checkName).sort((a, b) => a.mapIndex - b.mapIndex));
    out.push(...followers.filter((f) => f.checkName));
  }
  return out;
}
