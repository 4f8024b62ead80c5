import { sql, type Kysely, type Selectable } from "kysely";
import { recordAudit, type AuditEntry } from "./audit-trail.js";
import { InputError, serializeError, StorageError } from "../errors/index.js";
import type { AssetsTable, Database, DefinitionFilesTable, DefinitionSnapshotsTable } from "./database.js";
import type {
  AssetRecord,
  AssetSyncInput,
  DefinitionFile,
  DefinitionSnapshot,
  DefinitionStore,
  FileLoadInput,
  SaveSnapshotResult,
  SnapshotInput,
  SyncAssetsResult,
} from "./definition-store.js";
import { toJson } from "./json.js";

const SAVE_ATTEMPTS = 20;

/**
 * DefinitionStore in Postgres SQL through Kysely: runs unchanged on server
 * Postgres and on PGlite.
 */
export class PgDefinitionStore implements DefinitionStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async saveSnapshot({ contentHash, graph }: SnapshotInput): Promise<SaveSnapshotResult> {
    const graphJson = toJson(graph);
    // Versions are dense (latest + 1) and the primary key arbitrates races:
    // the loser of an insert re-reads the latest and either finds its own
    // hash there or tries the next version.
    for (let attempt = 0; attempt < SAVE_ATTEMPTS; attempt++) {
      const latest = await this.#db
        .selectFrom("definition_snapshots")
        .select(["version", "content_hash"])
        .orderBy("version", "desc")
        .limit(1)
        .executeTakeFirst();
      if (latest?.content_hash === contentHash) return { version: latest.version, changed: false };
      const version = (latest?.version ?? 0) + 1;
      const inserted = await this.#db
        .insertInto("definition_snapshots")
        .values({ version, content_hash: contentHash, graph: graphJson })
        .onConflict((oc) => oc.column("version").doNothing())
        .returning("version")
        .executeTakeFirst();
      if (inserted) return { version: inserted.version, changed: true };
    }
    throw new StorageError(
      "SNAPSHOT_CONTENTION",
      `could not store definitions snapshot ${contentHash} after ${SAVE_ATTEMPTS} attempts: too many concurrent writers`,
    );
  }

  async latestSnapshot(): Promise<DefinitionSnapshot | undefined> {
    const row = await this.#db.selectFrom("definition_snapshots").selectAll().orderBy("version", "desc").limit(1).executeTakeFirst();
    return row && toSnapshot(row);
  }

  async latestVersion(): Promise<number | undefined> {
    const row = await this.#db.selectFrom("definition_snapshots").select("version").orderBy("version", "desc").limit(1).executeTakeFirst();
    return row?.version;
  }

  async getSnapshot(version: number): Promise<DefinitionSnapshot | undefined> {
    const row = await this.#db.selectFrom("definition_snapshots").selectAll().where("version", "=", version).executeTakeFirst();
    return row && toSnapshot(row);
  }

  async recordFileLoad(input: FileLoadInput): Promise<DefinitionFile> {
    const ok = input.status === "ok";
    if (!ok && (input.error === undefined || input.error === null)) {
      throw new InputError(`recordFileLoad: a failed load of ${input.path} needs an error`, {
        location: { file: input.path },
      });
    }
    const row = await this.#db
      .insertInto("definition_files")
      .values({
        path: input.path,
        source_hash: input.sourceHash,
        status: input.status,
        error: ok ? null : toJson(input.error instanceof Error ? serializeError(input.error) : input.error),
        warnings: toJson(input.warnings ?? []),
        problems: toJson(input.problems ?? []),
        assets: toJson(ok ? (input.assets ?? []) : []),
        checks: toJson(ok ? (input.checks ?? []) : []),
        load_ms: Math.max(0, Math.round(input.loadMs)),
        loaded_at: sql<Date>`now()`,
        last_success_at: ok ? sql<Date>`now()` : null,
      })
      .onConflict((oc) =>
        oc.column("path").doUpdateSet((eb) => ({
          source_hash: eb.ref("excluded.source_hash"),
          status: eb.ref("excluded.status"),
          error: eb.ref("excluded.error"),
          warnings: eb.ref("excluded.warnings"),
          problems: eb.ref("excluded.problems"),
          load_ms: eb.ref("excluded.load_ms"),
          loaded_at: eb.ref("excluded.loaded_at"),
          // A failed load keeps the last good assets and checks: they keep scheduling.
          assets: ok ? eb.ref("excluded.assets") : eb.ref("definition_files.assets"),
          checks: ok ? eb.ref("excluded.checks") : eb.ref("definition_files.checks"),
          last_success_at: ok ? eb.ref("excluded.last_success_at") : eb.ref("definition_files.last_success_at"),
        })),
      )
      .returningAll()
      .executeTakeFirstOrThrow();
    return toFile(row);
  }

  async listFiles(): Promise<DefinitionFile[]> {
    const rows = await this.#db.selectFrom("definition_files").selectAll().orderBy("path").execute();
    return rows.map(toFile);
  }

  async listFileErrors(): Promise<DefinitionFile[]> {
    const rows = await this.#db.selectFrom("definition_files").selectAll().where("status", "=", "error").orderBy("path").execute();
    return rows.map(toFile);
  }

  async deleteFiles(paths: readonly string[]): Promise<number> {
    if (paths.length === 0) return 0;
    const result = await this.#db
      .deleteFrom("definition_files")
      .where("path", "in", [...new Set(paths)])
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async replaceProblems(problemsByPath: ReadonlyMap<string, readonly unknown[]>): Promise<void> {
    const input = toJson([...problemsByPath].map(([path, problems]) => ({ path, problems })));
    // One statement: rows whose problems are unchanged are not rewritten.
    await sql`
      with input as (
        select * from jsonb_to_recordset(${input}::jsonb) as x(path text, problems jsonb)
      ), wanted as (
        select f.path, coalesce(i.problems, '[]'::jsonb) as problems
        from definition_files f left join input i on i.path = f.path
      )
      update definition_files as f set problems = w.problems
      from wanted w
      where w.path = f.path and f.problems is distinct from w.problems`.execute(this.#db);
  }

  async transaction<T>(fn: (store: DefinitionStore) => Promise<T>): Promise<T> {
    if (this.#db.isTransaction) return fn(this);
    return this.#db.transaction().execute((trx) => fn(new PgDefinitionStore(trx)));
  }

  async syncAssets(version: number, assets: readonly AssetSyncInput[]): Promise<SyncAssetsResult> {
    const seen = new Set<string>();
    for (const asset of assets) {
      if (seen.has(asset.key)) {
        throw new InputError(`syncAssets: asset key "${asset.key}" appears twice`, { location: { assetKey: asset.key } });
      }
      seen.add(asset.key);
    }
    const input = toJson(
      assets.map((a) => ({
        key: a.key,
        file: a.file,
        spec: a.spec,
        group_name: a.groupName ?? null,
        owner: a.owner ?? null,
        is_source: a.isSource ?? false,
        partitions_hash: a.partitionsHash ?? null,
      })),
    );
    // One statement, one parameter (a JSON array), whatever the number of
    // assets: no 65 535-parameter limit, no partial sync. The two CTEs touch
    // disjoint rows (keys in the input / keys not in it).
    const { rows } = await sql<{ upserted: number; removed: string[] | null }>`
      with input as (
        select * from jsonb_to_recordset(${input}::jsonb) as x(
          key text, file text, spec jsonb, group_name text, owner text, is_source boolean, partitions_hash text)
      ), upserted as (
        insert into assets as a (key, file, spec, group_name, owner, is_source, partitions_hash,
                                 first_seen_version, last_seen_version)
        select key, file, spec, group_name, owner, is_source, partitions_hash, ${version}::int, ${version}::int from input
        on conflict (key) do update set
          file = excluded.file, spec = excluded.spec, group_name = excluded.group_name, owner = excluded.owner,
          is_source = excluded.is_source, partitions_hash = excluded.partitions_hash,
          last_seen_version = excluded.last_seen_version, removed_at = null, updated_at = now()
        where a.last_seen_version <= excluded.last_seen_version
        returning key
      ), removed as (
        update assets set removed_at = now(), updated_at = now()
        where removed_at is null and last_seen_version < ${version}::int
          and not exists (select 1 from input where input.key = assets.key)
        returning key
      )
      select (select count(*) from upserted)::int as upserted,
             (select jsonb_agg(key order by key) from removed) as removed`.execute(this.#db);
    const row = rows[0];
    return { upserted: row?.upserted ?? 0, removed: row?.removed ?? [] };
  }

  async listAssets(options: { includeRemoved?: boolean } = {}): Promise<AssetRecord[]> {
    let query = this.#db.selectFrom("assets").selectAll().orderBy("key");
    if (!options.includeRemoved) query = query.where("removed_at", "is", null);
    return (await query.execute()).map(toAsset);
  }

  async listDynamicPartitions(name: string): Promise<string[]> {
    const rows = await this.#db
      .selectFrom("dynamic_partitions")
      .select("partition_key")
      .where("name", "=", name)
      .orderBy("position")
      .execute();
    return rows.map((r) => r.partition_key);
  }

  async addDynamicPartitions(name: string, keys: readonly string[], audit?: AuditEntry): Promise<string[]> {
    for (const key of keys) {
      if (typeof key !== "string" || key === "") {
        throw new InputError(`dynamic partition keys of "${name}" must be non-empty strings`, { location: { field: name } });
      }
    }
    const unique = [...new Set(keys)];
    if (unique.length === 0) return [];
    // The audit record commits with the keys: a store already inside a transaction writes both there.
    if (audit) {
      return this.#db.isTransaction
        ? this.#addDynamicPartitions(this.#db, name, unique, audit)
        : this.#db.transaction().execute((trx) => this.#addDynamicPartitions(trx, name, unique, audit));
    }
    return this.#addDynamicPartitions(this.#db, name, unique, undefined);
  }

  async #addDynamicPartitions(
    db: Kysely<Database>,
    name: string,
    unique: readonly string[],
    audit: AuditEntry | undefined,
  ): Promise<string[]> {
    const { rows } = await sql<{ partition_key: string; position: number }>`
      insert into dynamic_partitions (name, partition_key)
      select ${name}, k from jsonb_array_elements_text(${toJson(unique)}::jsonb) with ordinality as t(k, ord)
      order by ord
      on conflict (name, partition_key) do nothing
      returning partition_key, position`.execute(db);
    if (audit) await recordAudit(db, { ...audit, detail: { ...audit.detail, added: rows.length } }, new Date());
    return rows.sort((a, b) => a.position - b.position).map((r) => r.partition_key);
  }
}

function toSnapshot(row: Selectable<DefinitionSnapshotsTable>): DefinitionSnapshot {
  return { version: row.version, contentHash: row.content_hash, graph: row.graph, createdAt: row.created_at };
}

function toFile(row: Selectable<DefinitionFilesTable>): DefinitionFile {
  return {
    path: row.path,
    sourceHash: row.source_hash,
    status: row.status,
    error: row.error,
    warnings: row.warnings,
    problems: row.problems,
    assets: row.assets,
    checks: row.checks,
    loadMs: row.load_ms,
    loadedAt: row.loaded_at,
    lastSuccessAt: row.last_success_at,
  };
}

function toAsset(row: Selectable<AssetsTable>): AssetRecord {
  return {
    key: row.key,
    file: row.file,
    spec: row.spec,
    groupName: row.group_name,
    owner: row.owner,
    isSource: row.is_source,
    partitionsHash: row.partitions_hash,
    firstSeenVersion: row.first_seen_version,
    lastSeenVersion: row.last_seen_version,
    removedAt: row.removed_at,
    paused: row.paused,
    pausedAt: row.paused_at,
  };
}
