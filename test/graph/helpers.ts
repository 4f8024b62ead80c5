import type { SnapshotAsset, SnapshotCheck } from "../../src/graph/index.js";
import type { AssetDefinition, CheckDefinition } from "../../src/index.js";

/** A definition as the loader would store it: its spec plus file and export name. */
export function snap(def: AssetDefinition, file: string, exportName?: string): SnapshotAsset {
  return { ...def.spec, file, exportName: exportName ?? def.key.replace(/\W/g, "_") };
}

export function snapCheck(def: CheckDefinition, file: string, exportName?: string): SnapshotCheck {
  return { ...def.spec, file, exportName: exportName ?? def.spec.name };
}

export const noop = (): null => null;
