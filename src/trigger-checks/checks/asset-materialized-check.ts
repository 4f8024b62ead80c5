import { z } from "zod";
import { defineTriggerCheck, type TriggerCheck } from "../trigger-check.js";
import { renderTemplate } from "../render-template.js";

/** The latest materialisation (or external event) of an asset partition, if any. */
export type MaterializedLookup = (assetKey: string, partitionKey: string) => Promise<{ eventId: number } | undefined>;

/** The SDK's default partition template: the waiting asset's own partition. */
const OWN_PARTITION = "{partition}";

/**
 * `assetMaterialized(assetKey, { partition })`: fires once the asset partition
 * has a materialisation; the payload carries its event id. Between an
 * unpartitioned waiter and an unpartitioned asset the default `{partition}`
 * means the asset's only partition, the key "".
 */
export function assetMaterializedCheck(materialized: MaterializedLookup): TriggerCheck<never> {
  return defineTriggerCheck({
    schema: z.object({ assetKey: z.string().min(1), partition: z.string().default(OWN_PARTITION) }),
    async check(args, { partition, signal }) {
      const partitionKey =
        partition === undefined && args.partition === OWN_PARTITION
          ? ""
          : renderTemplate(args.partition, partition, "args.partition", "trigger assetMaterialized");
      signal.throwIfAborted();
      const found = await materialized(args.assetKey, partitionKey);
      if (!found) {
        return { fired: false, detail: `asset "${args.assetKey}" partition "${partitionKey}" is not materialised yet` };
      }
      return { fired: true, payload: { assetKey: args.assetKey, partition: partitionKey, eventId: found.eventId } };
    },
  });
}
