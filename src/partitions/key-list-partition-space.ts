import { distance } from "fastest-levenshtein";
import { BasePartitionSpace } from "./base-partition-space.js";
import type { DynamicPartitionsSpec, StaticPartitionsSpec } from "./types.js";

const LISTED_KEYS = 20;
const SUGGESTION_SCAN_LIMIT = 10_000;

/** Static partitions (keys from the spec) and dynamic ones (keys from the database, insertion order). */
export class KeyListPartitionSpace extends BasePartitionSpace {
  readonly size: number;
  private readonly positions: ReadonlyMap<string, number>;

  constructor(
    readonly spec: StaticPartitionsSpec | DynamicPartitionsSpec,
    private readonly keyList: readonly string[],
  ) {
    super();
    this.size = keyList.length;
    this.positions = new Map(keyList.map((key, i) => [key, i]));
  }

  count(): number {
    return this.size;
  }

  keyOfExtended(index: number): string {
    const key = this.keyList[index];
    if (key === undefined) this.checkIndex(index);
    return key!;
  }

  locate(key: string): number | string {
    const index = this.positions.get(key);
    if (index !== undefined) return index;
    if (this.size === 0) return "it has no keys yet (add them with addDynamicPartitions)";
    const suggestion = this.closest(key);
    const listed = this.keyList
      .slice(0, LISTED_KEYS)
      .map((k) => `"${k}"`)
      .join(", ");
    const more = this.size > LISTED_KEYS ? `, … (${this.size} keys)` : "";
    return `${suggestion === undefined ? "" : `did you mean "${suggestion}"? `}valid keys: ${listed}${more}`;
  }

  windowOfExtended(index: number): undefined {
    this.checkIndex(index);
    return undefined;
  }

  private closest(key: string): string | undefined {
    if (this.size > SUGGESTION_SCAN_LIMIT) return undefined;
    let best: string | undefined;
    let bestDistance = Math.max(2, Math.floor(key.length / 3)) + 1;
    for (const candidate of this.keyList) {
      const d = distance(key, candidate);
      if (d < bestDistance) {
        best = candidate;
        bestDistance = d;
      }
    }
    return best;
  }
}
