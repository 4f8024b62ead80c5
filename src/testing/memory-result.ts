// The result of an in-memory materialisation: its steps' reports, looked up by asset and partition.
import { InputError } from "../errors/index.js";
import type { AssetGraph } from "../graph/index.js";
import type { AssetDefinition, OutputOf } from "../sdk/index.js";
import { describe } from "./definitions.js";
import { WHAT, type AssetRef, type CheckReport, type MaterializeResult, type StepReport } from "./materialize-types.js";

/** `asset "shop/orders" partition "2025-03-10" item 2`, `check "not_empty" of asset "shop/orders"`. */
export function describeStep(s: {
  assetKey: string;
  partitionKey: string;
  check?: string | undefined;
  mapIndex?: number | undefined;
}): string {
  const partition = s.partitionKey === "" ? "" : ` partition "${s.partitionKey}"`;
  const what = s.check ? `check "${s.check}" of asset "${s.assetKey}"` : `asset "${s.assetKey}"`;
  return `${what}${partition}${s.mapIndex === undefined ? "" : ` item ${s.mapIndex}`}`;
}

export const stepKey = (assetKey: string, partitionKey: string): string => `${assetKey}\u0000${partitionKey}`;

/** The result over the steps' reports in the order they ran; a lookup of what was not materialised here says so. */
export function memoryResult(graph: AssetGraph, steps: readonly StepReport[], checks: readonly CheckReport[]): MaterializeResult {
  const byPartition = new Map<string, StepReport>();
  for (const s of steps) if (s.check === undefined && s.mapIndex === undefined) byPartition.set(stepKey(s.assetKey, s.partitionKey), s);
  const keyOf = (asset: AssetRef): string => {
    const key = typeof asset === "string" ? asset : asset?.key;
    if (typeof key !== "string" || !graph.has(key)) {
      const near = typeof key === "string" ? graph.suggest(key) : undefined;
      throw new InputError(
        `${WHAT} result: ${typeof key === "string" ? `"${key}"` : describe(asset)} is not an asset of this materialisation` +
          `${near ? ` (did you mean "${near}"?)` : ""}`,
        { code: "MATERIALIZE_UNKNOWN_ASSET" },
      );
    }
    return key;
  };
  const step = (asset: AssetRef, partition = ""): StepReport => {
    const key = keyOf(asset);
    const found = byPartition.get(stepKey(key, partition));
    if (!found) {
      const planned = steps
        .filter((s) => s.assetKey === key && s.check === undefined && s.mapIndex === undefined)
        .map((s) => s.partitionKey);
      throw new InputError(
        `${WHAT} result: asset "${key}" ${partition === "" ? "(no partition given)" : `partition "${partition}"`} was not materialised here; ` +
          (planned.length > 0
            ? `its partitions here: ${planned.slice(0, 10).join(", ")}${planned.length > 10 ? ", …" : ""}`
            : "none of its partitions was"),
        { code: "MATERIALIZE_NOT_PLANNED", location: { assetKey: key, ...(partition ? { partitionKey: partition } : {}) } },
      );
    }
    return found;
  };
  return {
    success: steps.every((s) => s.status === "success" || s.status === "skipped"),
    steps,
    checks,
    step,
    output<A extends AssetDefinition>(asset: AssetRef<A>, partition?: string): OutputOf<A> {
      const s = step(asset, partition);
      if (s.status !== "success") {
        throw new InputError(
          `${WHAT} result: ${describeStep(s)} has no output: it ended ${s.status}${s.error ? ` (${s.error.message})` : s.reason ? ` (${s.reason})` : ""}`,
          { code: "MATERIALIZE_NO_OUTPUT", location: { assetKey: s.assetKey } },
        );
      }
      return s.output as OutputOf<A>;
    },
    outputs<A extends AssetDefinition>(asset: AssetRef<A>): ReadonlyMap<string, OutputOf<A>> {
      const key = keyOf(asset);
      const out = new Map<string, OutputOf<A>>();
      for (const s of steps) {
        if (s.assetKey === key && s.check === undefined && s.mapIndex === undefined && s.status === "success")
          out.set(s.partitionKey, s.output as OutputOf<A>);
      }
      return out;
    },
    logs: (asset, partition) => step(asset, partition).logs,
  };
}
