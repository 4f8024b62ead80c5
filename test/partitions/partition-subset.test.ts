import { describe, expect, it } from "vitest";
import { PartitionError } from "../../src/errors/index.js";
import { PartitionSubset, UNPARTITIONED } from "../../src/partitions/index.js";

/** Deterministic PRNG so failures reproduce. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1_664_525 + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

function randomSubset(rand: () => number, span: number): { subset: PartitionSubset; set: Set<number> } {
  const set = new Set<number>();
  const ranges: [number, number][] = [];
  const n = Math.floor(rand() * 8);
  for (let i = 0; i < n; i++) {
    const start = Math.floor(rand() * span) - 5;
    const end = start + Math.floor(rand() * 12);
    ranges.push([start, end]);
    for (let x = start; x < end; x++) set.add(x);
  }
  return { subset: PartitionSubset.fromRanges(ranges), set };
}

const sorted = (set: Set<number>) => [...set].sort((a, b) => a - b);

describe("PartitionSubset", () => {
  it("normalises ranges: sorted, merged, no empty or adjacent ranges", () => {
    const s = PartitionSubset.fromRanges([
      [10, 12],
      [0, 5],
      [5, 7],
      [3, 4],
      [20, 20],
      [11, 15],
    ]);
    expect(s.serialize()).toBe("0-7,10-15");
    expect(s.count()).toBe(12);
    expect(s.rangeCount).toBe(2);
    expect([...s.ranges()]).toEqual([
      [0, 7],
      [10, 15],
    ]);
    expect(s.first()).toBe(0);
    expect(s.last()).toBe(14);
    expect(PartitionSubset.fromIndices([5, 3, 4, 9, 3]).serialize()).toBe("3-6,9-10");
    expect(PartitionSubset.range(5, 5).isEmpty()).toBe(true);
    expect(PartitionSubset.empty().first()).toBeUndefined();
    expect(UNPARTITIONED.serialize()).toBe("0-1");
  });

  it("serialises compactly and parses back", () => {
    const s = PartitionSubset.range(0, 100).union(PartitionSubset.range(150, 151));
    expect(s.serialize()).toBe("0-100,150-151");
    expect(JSON.stringify({ s })).toBe('{"s":"0-100,150-151"}');
    expect(PartitionSubset.parse("0-100,150-151").equals(s)).toBe(true);
    expect(PartitionSubset.parse("").isEmpty()).toBe(true);
    expect(PartitionSubset.parse("-7--1,3-4").serialize()).toBe("-7--1,3-4");
    expect(PartitionSubset.parse("150-151, 0-100").equals(s)).toBe(true);
    for (const bad of ["5", "1-1", "3-2", "a-b", "0-10,"]) {
      expect(() => PartitionSubset.parse(bad)).toThrow(PartitionError);
    }
  });

  it("rejects indices that are not safe integers", () => {
    expect(() => PartitionSubset.range(0.5, 2)).toThrow(/safe integer/);
    expect(() => PartitionSubset.range(0, Infinity)).toThrow(PartitionError);
  });

  it("agrees with a naive set on random inputs", () => {
    const rand = random(42);
    for (let round = 0; round < 2000; round++) {
      const a = randomSubset(rand, 60);
      const b = randomSubset(rand, 60);
      const union = new Set([...a.set, ...b.set]);
      const intersection = new Set([...a.set].filter((x) => b.set.has(x)));
      const difference = new Set([...a.set].filter((x) => !b.set.has(x)));
      expect([...a.subset.union(b.subset)]).toEqual(sorted(union));
      expect([...a.subset.intersection(b.subset)]).toEqual(sorted(intersection));
      expect([...a.subset.difference(b.subset)]).toEqual(sorted(difference));
      expect(a.subset.count()).toBe(a.set.size);
      expect(a.subset.isSubsetOf(a.subset.union(b.subset))).toBe(true);
      expect(PartitionSubset.parse(a.subset.serialize()).equals(a.subset)).toBe(true);
      for (let x = -6; x < 72; x += 3) expect(a.subset.has(x)).toBe(a.set.has(x));
      const n = Math.floor(rand() * 10);
      expect([...a.subset.take(n)]).toEqual(sorted(a.set).slice(0, n));
      expect([...a.subset.indicesFrom(20)]).toEqual(sorted(a.set).filter((x) => x >= 20));
      expect([...a.subset.shift(7)]).toEqual(sorted(a.set).map((x) => x + 7));
      expect([...a.subset.clamp(10, 30)]).toEqual(sorted(a.set).filter((x) => x >= 10 && x < 30));
    }
  });

  it("is instant on 1 000 000-partition ranges and on 10 000 ranges", () => {
    const t0 = performance.now();
    const whole = PartitionSubset.range(0, 1_000_000);
    const holes = PartitionSubset.fromRanges(Array.from({ length: 10_000 }, (_, i) => [i * 100, i * 100 + 50] as [number, number]));
    const shifted = holes.shift(25);
    const union = holes.union(shifted);
    const intersection = holes.intersection(shifted);
    const difference = whole.difference(holes);
    expect(performance.now() - t0).toBeLessThan(200);
    expect(whole.count()).toBe(1_000_000);
    expect(union.count()).toBe(750_000);
    expect(union.rangeCount).toBe(10_000);
    expect(intersection.count()).toBe(250_000);
    expect(difference.count()).toBe(500_000);
    expect(difference.has(50)).toBe(true);
    expect(difference.has(49)).toBe(false);
    expect(holes.union(difference).equals(whole)).toBe(true);
    expect(PartitionSubset.parse(union.serialize()).equals(union)).toBe(true);
  });
});
