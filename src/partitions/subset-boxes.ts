import { PartitionSubset } from "./partition-subset.js";

/**
 * A product of per-axis index subsets (axes in linearisation order): the
 * shape in which a multi-dimensional subset is mapped one dimension at a time.
 */
export type Box = readonly PartitionSubset[];

/** strides[k] = product of sizes after k (the leading size may be Infinity; it is never used). */
export function stridesOf(sizes: readonly number[]): number[] {
  const strides = new Array<number>(sizes.length).fill(1);
  for (let k = sizes.length - 2; k >= 0; k--) strides[k] = strides[k + 1]! * sizes[k + 1]!;
  return strides;
}

/**
 * Splits a linear subset into boxes. A linear range becomes at most two
 * partial blocks per axis plus one run of whole blocks, so the cost is
 * O(ranges × axes), never O(partitions).
 */
export function boxesOf(subset: PartitionSubset, sizes: readonly number[]): Box[] {
  const strides = stridesOf(sizes);
  const last = sizes.length - 1;
  const out: Box[] = [];
  const full = (k: number) => PartitionSubset.range(0, sizes[k]!);

  const decompose = (a: number, b: number, k: number, prefix: readonly number[]): void => {
    if (a >= b) return;
    const fixed = prefix.map((p) => PartitionSubset.single(p));
    if (k === last) {
      out.push([...fixed, PartitionSubset.range(a, b)]);
      return;
    }
    const stride = strides[k]!;
    let qa = Math.floor(a / stride);
    const ra = a - qa * stride;
    const qb = Math.floor(b / stride);
    const rb = b - qb * stride;
    if (qa === qb) {
      decompose(ra, rb, k + 1, [...prefix, qa]);
      return;
    }
    if (ra > 0) {
      decompose(ra, stride, k + 1, [...prefix, qa]);
      qa++;
    }
    if (qa < qb) {
      const rest: PartitionSubset[] = [];
      for (let l = k + 1; l <= last; l++) rest.push(full(l));
      out.push([...fixed, PartitionSubset.range(qa, qb), ...rest]);
    }
    if (rb > 0) decompose(0, rb, k + 1, [...prefix, qb]);
  };

  if (strides[0] === 0) return out;
  for (const [a, b] of subset.ranges()) decompose(a, b, 0, []);
  return out;
}

/**
 * The linear ranges of a box. Trailing axes taken whole collapse into one
 * block, so a box of (date range × every region) is one range; otherwise the
 * cost is the number of ranges produced.
 */
export function linearize(box: Box, sizes: readonly number[]): [number, number][] {
  const strides = stridesOf(sizes);
  if (box.some((s) => s.isEmpty())) return [];
  // s = first axis of the trailing run taken whole (axis 0 is never "whole": it may be unbounded).
  let s = box.length;
  while (s > 1 && box[s - 1]!.equals(PartitionSubset.range(0, sizes[s - 1]!))) s--;
  const lastPartial = s - 1;
  const out: [number, number][] = [];
  const walk = (k: number, base: number): void => {
    const stride = strides[k]!;
    if (k === lastPartial) {
      for (const [a, b] of box[k]!.ranges()) out.push([base + a * stride, base + b * stride]);
      return;
    }
    for (const i of box[k]!) walk(k + 1, base + i * stride);
  };
  walk(0, 0);
  return out;
}
