import type { Lane } from "./lane.js";

/** The lanes a scheduler places steps on, and which of its steps each one runs. */
export class LaneLoads<T> {
  private readonly loads = new Map<Lane, Set<T>>();

  add(lane: Lane): void {
    this.loads.set(lane, new Set());
  }

  /** Takes the lane out; returns what ran on it, or undefined when it was not (or no longer) a lane here. */
  remove(lane: Lane): readonly T[] | undefined {
    const onLane = this.loads.get(lane);
    if (!this.loads.delete(lane)) return undefined;
    return [...(onLane ?? [])];
  }

  loadOf(lane: Lane): number {
    return this.loads.get(lane)?.size ?? 0;
  }

  /** The accepting lane with room that runs the fewest steps (the first of equals). */
  leastLoaded(): Lane | undefined {
    let best: Lane | undefined;
    let bestLoad = Infinity;
    for (const [lane, onLane] of this.loads) {
      if (!lane.accepting) continue;
      const load = onLane.size;
      if (load < lane.capacity && load < bestLoad) {
        best = lane;
        bestLoad = load;
      }
    }
    return best;
  }

  place(lane: Lane, item: T): void {
    this.loads.get(lane)!.add(item);
  }

  /** The item no longer runs on `lane` (a no-op once the lane is removed). */
  release(lane: Lane, item: T): void {
    this.loads.get(lane)?.delete(item);
  }
}
