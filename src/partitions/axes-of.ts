import { MultiPartitionSpace, type Axis } from "./multi-partition-space.js";
import type { AnyPartitionSpace } from "./partition-space.js";

/** The axes of a space in linearisation order: a single-dimension space is one unnamed axis. */
export function axesOf(space: AnyPartitionSpace): readonly Axis[] {
  return space instanceof MultiPartitionSpace ? space.axes : [{ name: null, space, position: 0 }];
}

/** Position (linearisation order) of the axis a plan link names. */
export function axisIndex(axes: readonly Axis[], name: string | null): number {
  if (name === null) return 0;
  const index = axes.findIndex((a) => a.name === name);
  if (index < 0) throw new TypeError(`no dimension "${name}" (planMapping should have refused it)`);
  return index;
}
