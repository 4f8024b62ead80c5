import type { Kysely } from "kysely";
import type { Database } from "../storage/index.js";
import type { MaterializedLookup } from "./checks/asset-materialized-check.js";

/**
 * The default lookup for `assetMaterialized`: the partition's latest
 * materialisation or external event from partition_status (a primary-key
 * read). A partition that failed after an earlier success still counts: its
 * data exists.
 */
export function pgMaterializedLookup(db: Kysely<Database>): MaterializedLookup {
  return async (assetKey, partitionKey) => {
    const row = await db
      .selectFrom("partition_status")
      .select("last_materialization_event_id")
      .where("asset_key", "=", assetKey)
      .where("partition_key", "=", partitionKey)
      .where("last_materialization_event_id", "is not", null)
      .executeTakeFirst();
    const id = row?.last_materialization_event_id;
    return id === null || id === undefined ? undefined : { eventId: Number(id) };
  };
}
