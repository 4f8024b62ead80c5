import type { AssetGraph } from "../../src/graph/index.js";
import { partitionSpace, PartitionSubset } from "../../src/partitions/index.js";
import type { AssetAutomationState, AssetView, AutomationTickResult } from "../../src/reconciler/index.js";
import { runAutomationTick } from "../../src/reconciler/index.js";

export interface ViewKeys {
  materialized?: readonly string[];
  failed?: readonly string[];
  inProgress?: readonly string[];
  upstreamUpdated?: readonly string[];
  codeVersionChanged?: readonly string[];
  paused?: boolean;
}

/**
 * A tiny automation world: views given as key lists per asset, states carried
 * from tick to tick, the clock moved by the test.
 */
export class AutomationWorld {
  views: Record<string, ViewKeys> = {};
  states = new Map<string, AssetAutomationState>();
  last: AutomationTickResult | undefined;

  constructor(readonly graph: AssetGraph) {}

  set(assetKey: string, keys: ViewKeys): this {
    this.views[assetKey] = { ...this.views[assetKey], ...keys };
    return this;
  }

  tick(at: string, options: { only?: string[]; maxRequestedPerAsset?: number } = {}): AutomationTickResult {
    const now = new Date(at);
    const result = runAutomationTick({
      graph: this.graph,
      ctx: undefined,
      now,
      view: (key) => this.view(key),
      states: this.states,
      only: options.only ? new Set(options.only) : undefined,
      ...(options.maxRequestedPerAsset ? { maxRequestedPerAsset: options.maxRequestedPerAsset } : {}),
    });
    for (const [k, s] of result.states) this.states.set(k, s);
    this.last = result;
    return result;
  }

  /** `asset@key` of everything the last tick requested, in run order. */
  requested(result = this.last!): string[] {
    return result.runs.flatMap((r) => r.assetKeys.map((a) => `${a}@${r.partitionKey ?? ""}`));
  }

  view(key: string): AssetView {
    const v = this.views[key] ?? {};
    const spec = this.graph.require(key).partitions;
    const subset = (keys: readonly string[] | undefined): PartitionSubset =>
      !keys || keys.length === 0 ? PartitionSubset.EMPTY : spec ? partitionSpace(spec).subset(keys) : PartitionSubset.range(0, 1);
    return {
      materialized: subset(v.materialized),
      failed: subset(v.failed),
      inProgress: subset(v.inProgress),
      upstreamUpdated: subset(v.upstreamUpdated),
      codeVersionChanged: subset(v.codeVersionChanged),
      paused: v.paused ?? false,
      updateCauses: [],
    };
  }
}
