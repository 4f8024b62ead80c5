import { sql, type Kysely } from "kysely";
import { withAudit, type AuditEntry } from "./audit-trail.js";
import { GraphError, InputError } from "../errors/index.js";
import { suggestKey } from "../graph/index.js";
import type { Database } from "./database.js";
import { notifyIn } from "./database-handle.js";
import type { AssetPauseState, PauseStore, PauseTarget } from "./pause-store.js";
import { WAKE_CHANNEL } from "./runs/channels.js";

/** PauseStore on the assets table (server Postgres and PGlite). */
export class PgPauseStore implements PauseStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  pause(target: PauseTarget, now: Date, audit?: AuditEntry): Promise<AssetPauseState[]> {
    return this.setPaused(target, true, now, audit);
  }

  resume(target: PauseTarget, now: Date, audit?: AuditEntry): Promise<AssetPauseState[]> {
    return this.setPaused(target, false, now, audit);
  }

  async pauseStates(assetKeys: readonly string[]): Promise<Map<string, { paused: boolean; pausedAt: Date | null }>> {
    const out = new Map<string, { paused: boolean; pausedAt: Date | null }>();
    if (assetKeys.length === 0) return out;
    const rows = await this.#db
      .selectFrom("assets")
      .select(["key", "paused", "paused_at"])
      .where("key", "in", [...new Set(assetKeys)])
      .execute();
    for (const r of rows) out.set(r.key, { paused: r.paused, pausedAt: r.paused_at });
    return out;
  }

  private async setPaused(target: PauseTarget, paused: boolean, now: Date, audit: AuditEntry | undefined): Promise<AssetPauseState[]> {
    const verb = paused ? "pause" : "resume";
    const keys = [...new Set(target.assetKeys ?? [])];
    const group = target.group;
    if (keys.length === 0 && (group === undefined || group === "")) {
      throw new InputError(`${verb}: name the assets to ${verb} (asset keys) or a group (--group / group)`, {
        code: "PAUSE_TARGET_REQUIRED",
      });
    }
    for (const [i, k] of keys.entries()) {
      if (typeof k !== "string" || k === "") {
        throw new InputError(`${verb}: assetKeys[${i}] must be a non-empty asset key`, {
          code: "INPUT_INVALID",
          location: { field: `assetKeys[${i}]` },
        });
      }
    }
    return this.#db.transaction().execute(async (trx) =>
      withAudit(trx, audit, now, async () => {
        // Locked in key order, so two overlapping requests queue instead of deadlocking.
        const targeted = await sql<{ key: string; group_name: string | null; paused: boolean; paused_at: Date | null }>`
        select key, group_name, paused, paused_at from assets
        where removed_at is null and (key = any(${keys}::text[]) or group_name = ${group ?? null})
        order by key for no key update`.execute(trx);
        const found = new Set(targeted.rows.map((r) => r.key));
        const unknown = keys.filter((k) => !found.has(k));
        if (unknown.length > 0) {
          const all = await trx.selectFrom("assets").select("key").where("removed_at", "is", null).execute();
          const k = unknown[0]!;
          const near = suggestKey(
            k,
            all.map((r) => r.key),
          );
          throw new GraphError(
            "GRAPH_UNKNOWN_ASSET",
            `${verb}: no asset has the key "${k}"${near ? `; did you mean "${near}"?` : ""}` +
              (unknown.length > 1
                ? ` (unknown too: ${unknown
                    .slice(1)
                    .map((u) => `"${u}"`)
                    .join(", ")})`
                : ""),
            { location: { assetKey: k } },
          );
        }
        if (group !== undefined && group !== "" && !targeted.rows.some((r) => r.group_name === group)) {
          const groups = await sql<{ group_name: string }>`
          select distinct group_name from assets where removed_at is null and group_name is not null order by group_name`.execute(trx);
          const names = groups.rows.map((r) => r.group_name);
          throw new InputError(
            `${verb}: no asset is in the group "${group}"; ` +
              (names.length > 0
                ? `the groups are ${names.map((n) => `"${n}"`).join(", ")}`
                : "no asset has a group yet (are the definitions loaded?)"),
            { code: "GROUP_UNKNOWN", location: { field: "group" } },
          );
        }
        const toChange = targeted.rows.filter((r) => r.paused !== paused).map((r) => r.key);
        const changed = new Map<string, Date | null>();
        if (toChange.length > 0) {
          const updated = await trx
            .updateTable("assets")
            .set({ paused, paused_at: paused ? now : null, updated_at: now })
            .where("key", "in", toChange)
            .returning(["key", "paused_at"])
            .execute();
          for (const u of updated) changed.set(u.key, u.paused_at);
          // Resumed assets may be due at once; paused ones stop being considered.
          await notifyIn(trx, WAKE_CHANNEL, "pause");
        }
        return targeted.rows.map((r) => ({
          assetKey: r.key,
          group: r.group_name,
          paused,
          pausedAt: changed.has(r.key) ? (changed.get(r.key) ?? null) : r.paused_at,
          changed: changed.has(r.key),
        }));
      }),
    );
  }
}
