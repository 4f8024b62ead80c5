import { PartitionError } from "../errors/index.js";
import { describePartitions } from "./describe-partitions.js";
import type { PartitionSpace } from "./partition-space.js";
import { PartitionSubset } from "./partition-subset.js";
import type { PartitionsSpec, TimeWindow } from "./types.js";

/** What the concrete spaces share: validation, error messages, ranges and key iteration. */
export abstract class BasePartitionSpace implements PartitionSpace {
  abstract readonly spec: PartitionsSpec;
  abstract readonly size: number;
  private description: string | undefined;

  abstract count(now: Date): number;

  /**
   * Key of any index the definition can name, including (for time windows)
   * indices before its start or after its end: used to report missing
   * upstream partitions.
   */
  abstract keyOfExtended(index: number): string;

  /** The index of `key`, or why it is not a partition (a phrase completing `"x" is not a partition of …: `). */
  abstract locate(key: string): number | string;

  abstract windowOfExtended(index: number): TimeWindow | undefined;

  describe(): string {
    this.description ??= describePartitions(this.spec);
    return this.description;
  }

  all(now: Date): PartitionSubset {
    return PartitionSubset.range(0, this.count(now));
  }

  keyAt(index: number): string {
    this.checkIndex(index);
    return this.keyOfExtended(index);
  }

  indexOf(key: string): number {
    const found = this.locate(key);
    if (typeof found === "string") {
      throw new PartitionError(`"${key}" is not a partition of ${this.describe()}: ${found}`, {
        code: "PARTITION_KEY_INVALID",
        location: { partitionKey: key },
      });
    }
    return found;
  }

  has(key: string): boolean {
    return typeof this.locate(key) === "number";
  }

  window(key: string): TimeWindow | undefined {
    return this.windowOfExtended(this.indexOf(key));
  }

  windowAt(index: number): TimeWindow | undefined {
    this.checkIndex(index);
    return this.windowOfExtended(index);
  }

  range(fromKey: string, toKey: string): PartitionSubset {
    return this.indexRange(fromKey, this.indexOf(fromKey), toKey, this.indexOf(toKey));
  }

  subset(keys: Iterable<string>): PartitionSubset {
    const indices: number[] = [];
    for (const key of keys) indices.push(this.indexOf(key));
    return PartitionSubset.fromIndices(indices);
  }

  *keys(subset: PartitionSubset): IterableIterator<string> {
    const first = subset.first();
    const last = subset.last();
    if (first !== undefined && last !== undefined) {
      this.checkIndex(first);
      this.checkIndex(last);
    }
    for (const index of subset) yield this.keyOfExtended(index);
  }

  dimensions(key: string): Readonly<Record<string, string>> | undefined {
    this.indexOf(key);
    return undefined;
  }

  protected indexRange(fromKey: string, from: number, toKey: string, to: number): PartitionSubset {
    if (to < from) {
      throw new PartitionError(
        `reversed partition range of ${this.describe()}: "${fromKey}" comes after "${toKey}"; swap --from and --to`,
        { code: "PARTITION_RANGE_INVALID" },
      );
    }
    return PartitionSubset.range(from, to + 1);
  }

  protected checkIndex(index: number): void {
    if (!Number.isSafeInteger(index) || index < 0 || index >= this.size) {
      const expected = this.size === 0 ? "it has no partitions" : `expected an integer 0 <= index < ${this.size}`;
      throw new PartitionError(`index ${index} is not a partition of ${this.describe()}: ${expected}`, {
        code: "PARTITION_INDEX_INVALID",
      });
    }
  }
}
